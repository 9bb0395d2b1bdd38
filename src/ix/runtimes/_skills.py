"""How Claude Code offers skills to the model, rebuilt for API-level subjects.

Claude Code (CLI 2.1.332, observed on the wire) offers skills in two places:

- a `Skill` tool, whose definition is `SKILL_TOOL` below, byte for byte the one captured in
  `shared/fixtures/claude-api-request/skill_tool_definition.json`;
- the listing, a `<system-reminder>` text block at the start of the FIRST user message
  ("The following skills are available for use with the Skill tool:" then one
  `- name: description` line per skill), before the prompt; see
  `skill_listing_system_reminder.json` in the same folder.

A subject without skills gets neither (the control condition). `openai_skill_tool()` is the
same tool as a Chat Completions function tool.
"""

import copy
from collections.abc import Mapping, Sequence
from typing import Any

SKILL_TOOL_NAME = "Skill"

_SKILL_TOOL_DESCRIPTION = (
    "Invoke a skill.\n\nA skill is a packaged set of instructions the user or project has set "
    "up for a particular kind of task (deploy steps, a review checklist, a repo-specific "
    "workflow). Available skills appear in a system-reminder listing with one-line "
    "descriptions. When the task at hand is one a listed skill covers, call this tool first "
    "\u2014 the skill's instructions load into the turn for you to follow in place of your "
    "default approach; some skills instead run in a subagent and return the finished result. "
    "A skill that runs in the background returns only the agent's name \u2014 its result "
    "arrives later as a task notification, so don't wait on it or invoke it again in the "
    "meantime. Users may also ask for one by name (`/<name>`, or \"slash command\"); that's a "
    "request to invoke it.\n\n- `skill`: exact name from the listing, no leading slash. "
    "Plugin skills use `plugin:skill`. Directory-scoped skills are listed with a path prefix "
    "(`apps/web:deploy`); when both scoped and unscoped variants of a name exist, pick the one "
    "whose directory contains the files you're working on (most specific wins; unscoped "
    "otherwise).\n- `args`: optional arguments to pass through.\n\nOnly names from the "
    "listing (or that the user typed explicitly) are valid. Built-in CLI commands (`/help`, "
    "`/clear`, \u2026) aren't skills. If a `<command-name>` block is already present this "
    "turn, the skill is loaded \u2014 follow it directly rather than calling again.\n"
)

#: The `Skill` tool exactly as Claude Code 2.1.332 sends it to the Messages API.
SKILL_TOOL: dict[str, Any] = {
    "name": SKILL_TOOL_NAME,
    "description": _SKILL_TOOL_DESCRIPTION,
    "input_schema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "skill": {
                "description": "The name of a skill from the available-skills list. "
                               "Do not guess names.",
                "type": "string",
            },
            "args": {
                "description": "Optional arguments for the skill",
                "type": "string",
            },
        },
        "required": ["skill"],
        "additionalProperties": False,
    },
}

LISTING_HEADER = "The following skills are available for use with the Skill tool:"


def subject_skills(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """`(name, description)` of each skill a subject has (`config["skills"]`), in order."""
    out = []
    for skill in config.get("skills") or ():
        if isinstance(skill, Mapping):
            out.append((str(skill["name"]), str(skill.get("description", ""))))
        else:  # a bare name: no description to show
            out.append((str(skill), ""))
    return out


def skill_listing(skills: Sequence[tuple[str, str]]) -> str | None:
    """The system-reminder text that lists the skills, as Claude Code words it; None if none."""
    if not skills:
        return None
    lines = "\n".join(f"- {name}: {description}" for name, description in skills)
    return f"<system-reminder>\n{LISTING_HEADER}\n\n{lines}\n</system-reminder>"


def anthropic_skill_tool() -> dict[str, Any]:
    """A fresh copy of `SKILL_TOOL` (Messages API form), safe to mutate."""
    return copy.deepcopy(SKILL_TOOL)


def openai_skill_tool() -> dict[str, Any]:
    """The same tool as a Chat Completions function tool.

    The parameters are the tool's `input_schema` without its `$schema` key: it is metadata
    only, and some OpenAI-compatible servers reject schema keywords they do not know.
    """
    schema = {k: v for k, v in copy.deepcopy(SKILL_TOOL["input_schema"]).items()
              if k != "$schema"}
    return {"type": "function", "function": {"name": SKILL_TOOL_NAME,
                                             "description": SKILL_TOOL["description"],
                                             "parameters": schema}}
