"""The text of the CI workflow `ix ci init` writes (`ix.api.integrations.ci` plans it): what
a name in it may hold, the quoting, the templates, and the reading back.

The workflow is written from a template rather than dumped from a mapping: it carries comments
(which secrets to set, where the baseline comes from) that a reader of the file needs. Every
value put into it is quoted for the shell (`shlex.quote`: POSIX, right for GitHub's bash and
GitLab's sh) and then by the YAML emitter, never pasted in; secrets appear only as references
to the platform's secrets (`${{ secrets.NAME }}`; GitLab passes CI/CD variables itself).

A name that comes from the lab (its path, an experiment's folder, the battery's path) can come
from someone else. GitHub substitutes `${{ ... }}` anywhere in a workflow, inside shell quotes
too, so a name holding one, or anything else a shell, YAML or a command reads specially when a
quote is missed (`$(`, backticks, quotes, line breaks and other control characters, a leading
`-` or `~`), is refused (exit 2 naming the field) rather than escaped (`check_name`). Last,
the text is parsed back and must hold exactly the commands, folders and names it was
generated from (`read_back`) before it is printed or written.
"""

import re
import shlex
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import jinja2
import yaml

from ix._version import __version__
from ix.domain.errors import ConfigError

Platform = Literal["github", "gitlab"]
REPORTS_DIR = "ix-reports"
_WORKSPACE: dict[Platform, str] = {"github": "$GITHUB_WORKSPACE", "gitlab": "$CI_PROJECT_DIR"}
#: What a name put into the workflow may not hold: GitHub evaluates `${{` even inside shell
#: quotes; the others start a command or end a quote wherever a quote is missed.
_UNSAFE_IN_NAMES = ("${{", "$(", "`", "'", '"')
#: Characters no name or command line in the workflow holds: control and format characters
#: (a line break ends a YAML comment or block; a bidi override hides what a line says) and
#: the line and paragraph separators YAML 1.1 reads as line breaks.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
#: The expressions the workflow itself holds; GitHub evaluates no other `${{`.
_IF_INSTALLED = "${{ !cancelled() && steps.install.outcome == 'success' }}"
_IF_PULL_REQUEST = ("${{ !cancelled() && steps.install.outcome == 'success' && "
                    "github.event_name == 'pull_request' }}")
_JOB_TOKEN = "${{ github.token }}"
_CONCURRENCY = "ix-${{ github.ref }}"


@dataclass(frozen=True)
class Gate:
    """One experiment the workflow gates: its folder (relative to the repository root) and
    the tag of its baseline run; `tagged`: the tag exists in the lab now."""

    experiment: str
    folder: str
    tag: str
    tagged: bool


def _q(word: str) -> str:
    return shlex.quote(word)


def _unsafe(text: str, pieces: Sequence[str]) -> str | None:
    """What in `text` is unsafe in a workflow (a character no line may hold, or one of
    `pieces`), described for a message; None: nothing."""
    for ch in text:
        if unicodedata.category(ch) in _UNSAFE_CATEGORIES:
            return f"the character U+{ord(ch):04X}"
    for piece in pieces:
        if piece in text:
            return repr(piece)
    return None


def check_name(name: str, field: str, what: str) -> str:
    """`name` (a path relative to the repository root), or a ConfigError on `field` when it
    holds what a shell, GitHub or YAML would read as more than a name."""
    bad = _unsafe(name, _UNSAFE_IN_NAMES)
    lead = next((part[0] for part in name.split("/") if part[:1] in ("-", "~")), None)
    if bad is None and lead is not None:
        bad = f"a leading {lead!r}"
    if bad is not None:
        raise ConfigError(f"{what} {name!r} holds {bad}, which a CI workflow could read as "
                          "code, an option or a home folder (GitHub evaluates ${{ }} even "
                          "inside quotes); rename it (letters, digits, spaces and . _ -, "
                          "not first)", field=field)
    return name


def check_text(text: str, field: str) -> None:
    """A command line given as shell words (`--install`): it may quote, but not hold a line
    break, a control character or a GitHub expression."""
    bad = _unsafe(text, ("${{",))
    if bad is not None:
        raise ConfigError(f"holds {bad}, which does not belong in a workflow's command line "
                          "(GitHub evaluates ${{ }} even inside quotes)", field=field)


#: Plain scalars a YAML 1.2 reader (GitHub's) takes for a number, a boolean or null where
#: PyYAML (YAML 1.1) writes them unquoted (`1e3`, `0o17`): quoted.
_YAML12_NOT_STRING = re.compile(
    r"~|null|Null|NULL|true|True|TRUE|false|False|FALSE|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)")
_LINE_BREAKS = "\n\r\x85\u2028\u2029"


def _dump(value: Any, style: str | None = None) -> str:
    return yaml.safe_dump(value, default_flow_style=True, default_style=style, width=10**6,
                          allow_unicode=True).removesuffix("\n...\n").strip()


def _yaml(value: Any) -> str:
    """`value` as a YAML scalar on one line (quoted only where YAML 1.1 or 1.2 needs it; a
    line break is escaped in double quotes, never written as one)."""
    style = "'" if isinstance(value, str) and _YAML12_NOT_STRING.fullmatch(value) else None
    text = _dump(value, style)
    if any(ch in text for ch in _LINE_BREAKS):
        text = _dump(value, '"')
    return text


class _Literal(str):
    """A string the emitter writes as a block literal (`|`) where it can."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Literal, lambda dumper, value: dumper.represent_scalar(
    "tag:yaml.org,2002:str", value, style="|"))


def _literal(value: str, indent: int) -> str:
    """`value` as a YAML block literal, its lines indented by `indent` (as the emitter wrote
    them, moved right as a whole); where the emitter will not write a block, one line."""
    if any(unicodedata.category(ch) in _UNSAFE_CATEGORIES for ch in value.replace("\n", "")):
        return _yaml(value)
    text = yaml.dump(_Literal(value), Dumper=_Dumper, width=10**6, allow_unicode=True)
    head, *lines = text.removesuffix("\n").removesuffix("\n...").split("\n")
    if not head.startswith("|") or any(line and not line.startswith("  ") for line in lines):
        return _yaml(value)
    return "\n".join([head, *(" " * indent + line[2:] if line else "" for line in lines)])


def _comment(text: Any) -> str:
    """`text` for a YAML comment: one line, whatever it holds (a checked name holds no line
    break; this is the net under the check)."""
    return "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch) in _UNSAFE_CATEGORIES
                   else ch for ch in str(text))


_ENV = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                          undefined=jinja2.StrictUndefined, autoescape=False)
_ENV.filters["yaml"] = _yaml
_ENV.filters["literal"] = _literal
_ENV.filters["comment"] = _comment


def gate_line(platform: Platform, gate: Gate) -> str:
    """The gate's command, run from the experiment's folder; its report goes to the reports
    folder at the repository root."""
    report = _q(f"{REPORTS_DIR}/{gate.experiment}.html")
    return (f"ix report --baseline {_q(gate.tag)} --format html --out "
            f"\"{_WORKSPACE[platform]}\"/{report}")


def summary_line(platform: Platform, gate: Gate) -> str:
    """The command that writes the gate's first screen as GitHub Markdown
    (`ix report --format github`) into the reports folder, run from the experiment's folder."""
    return (f"ix report --baseline {_q(gate.tag)} --format github --out "
            f"\"{_WORKSPACE[platform]}\"/{_q(f'{REPORTS_DIR}/{gate.experiment}.md')}")


def scripts(platform: Platform, command: str, install: str, gates: Sequence[Gate],
            pr_comment: bool = False) -> list[str]:
    """The workflow's shell code in order: GitHub's `run:` of each step (install, run, each
    gate, each gate's step summary, the comment), GitLab's `script:` lines (every gate runs,
    then the job exits with the last failure's code)."""
    comment = f"ix ci comment {REPORTS_DIR}/*.md"
    if platform == "github":
        # exit 1 (a regression) is the gate's to report; the summary is written all the same
        return [install, f"mkdir -p {REPORTS_DIR}\n{command}\n",
                *(gate_line(platform, g) for g in gates),
                *(f"{summary_line(platform, g)} || [ $? -eq 1 ]\ncat "
                  f"\"$GITHUB_WORKSPACE\"/{_q(f'{REPORTS_DIR}/{g.experiment}.md')} >> "
                  "\"$GITHUB_STEP_SUMMARY\"\n" for g in gates),
                *([comment] if pr_comment else [])]
    return [install, f"mkdir -p {REPORTS_DIR}", "status=0", f"{command} || status=$?",
            *(f"(cd {_q(g.folder)} && {gate_line(platform, g)}) || status=$?" for g in gates),
            *(f"(cd {_q(g.folder)} && {summary_line(platform, g)}) || status=$?"
              for g in gates),
            *([f'if [ -n "$CI_MERGE_REQUEST_IID" ]; then {comment} --gitlab || status=$?; fi']
              if pr_comment else []),
            "exit $status"]


def render(platform: Platform, **values: Any) -> str:
    """The workflow text of `platform` from `values` (see `plan_workflow`)."""
    values["version"] = __version__
    values["reports"] = REPORTS_DIR
    values["scripts"] = scripts(platform, values["command"], values["install"],
                                values["gates"], values.get("pr_comment", False))
    values.setdefault("pr_comment", False)
    values["if_installed"], values["concurrency"] = _IF_INSTALLED, _CONCURRENCY
    values["if_pull_request"], values["job_token"] = _IF_PULL_REQUEST, _JOB_TOKEN
    source = _GITHUB if platform == "github" else _GITLAB
    return _ENV.from_string(source).render(**values)


def read_back(platform: Platform, text: str, *, command: str, install: str, schedule: str,
              python: str, gates: Sequence[Gate], secrets: Sequence[str],
              pr_comment: bool = False) -> None:
    """A ConfigError unless `text`, parsed as YAML, holds exactly the shell code, folders,
    step names and secrets it was generated from, and no GitHub expression but its own: the
    net under the quoting, so that a name no check foresaw is never written into a workflow
    as something else."""
    lines = scripts(platform, command, install, gates, pr_comment)
    try:
        document = yaml.safe_load(text)
        problem = (_github_problem(document, lines, schedule, gates, secrets, pr_comment)
                   if platform == "github" else _gitlab_problem(document, lines, python))
    except (yaml.YAMLError, AttributeError, KeyError, TypeError, ValueError) as exc:
        problem = f"it is not a workflow: {type(exc).__name__}"
    if problem:
        raise ConfigError(f"the generated workflow does not read back as generated "
                          f"({problem}); nothing was written. This is a bug of ix: please "
                          "report it with the names of the lab's folders")


def _github_problem(document: Any, lines: Sequence[str], schedule: str,
                    gates: Sequence[Gate], secrets: Sequence[str],
                    pr_comment: bool) -> str | None:
    # PyYAML reads YAML 1.1, where the key `on` is True (GitHub reads YAML 1.2: "on")
    if set(document) != {"name", True, "permissions", "concurrency", "jobs"}:
        return f"top-level keys {sorted(map(str, document))}"
    if document[True].get("schedule") != [{"cron": schedule}]:
        return "the schedule"
    if list(document["jobs"]) != ["ix"]:
        return f"jobs {list(document['jobs'])}"
    env = {name: f"${{{{ secrets.{name} }}}}" for name in secrets}
    want = [("Install ix", None, lines[0], None),
            ("Run the experiments", None, lines[1], env or None),
            *((f"Gate {g.experiment} against {g.tag}", g.folder, line, None)
              for g, line in zip(gates, lines[2:2 + len(gates)], strict=True)),
            *((f"Summarise {g.experiment}", g.folder, line, None)
              for g, line in zip(gates, lines[2 + len(gates):2 + 2 * len(gates)],
                                 strict=True)),
            *([("Comment on the pull request", None, lines[-1],
                {"GITHUB_TOKEN": _JOB_TOKEN})] if pr_comment else [])]
    got = [(s.get("name"), s.get("working-directory"), s.get("run"), s.get("env"))
           for s in document["jobs"]["ix"]["steps"] if "uses" not in s]
    if got != want:
        return "the steps' names, folders or commands"
    own = {_IF_INSTALLED, _CONCURRENCY, *env.values(),
           *((_IF_PULL_REQUEST, _JOB_TOKEN) if pr_comment else ())}
    if any("${{" in x and x not in own for x in _strings(document)):
        return "an expression GitHub would evaluate"
    return None


def _gitlab_problem(document: Any, lines: Sequence[str], python: str) -> str | None:
    if list(document) != ["ix"]:
        return f"top-level keys {sorted(map(str, document))}"
    if document["ix"]["script"] != lines:
        return "the script"
    if document["ix"]["image"] != f"python:{python}":
        return "the image"
    return None


def _strings(node: Any) -> Iterator[str]:
    """Every string in a parsed document: keys and values, at any depth."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(key)
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


_HEADER = """\
# Written by `ix ci init` (ix {{ version }}); docs/scheduling.md explains every part.
# Runs `{{ command | comment }}` on a schedule (cron {{ schedule }}, UTC), on {{ review }}
# and by hand; fails when an experiment's metric credibly regressed against its baseline run
# (`ix report --baseline TAG`: exit 1), and keeps the HTML reports as an artifact.
# The baselines are tagged runs committed with the lab: `ix tag RUN TAG`, then commit
# <lab>/tags.yaml and the run's folder (<experiment>/results/runs/RUN_ID).
{% if secrets %}
# Secrets it needs ({{ where }}): {{ secrets | join(', ') }}.
{% endif %}
"""

_GITHUB = _HEADER.replace("{{ review }}", "pull requests").replace(
    "{{ where }}", "Settings > Secrets and variables > Actions") + """\
name: ix

on:
  schedule:
    - cron: "{{ schedule }}"  # UTC
  pull_request:
  workflow_dispatch:

permissions:
  contents: read
{% if pr_comment %}
  pull-requests: write  # the one comment `ix ci comment` posts and updates
{% endif %}

concurrency:
  group: {{ concurrency }}
  cancel-in-progress: true

jobs:
  ix:
    runs-on: ubuntu-latest
    timeout-minutes: {{ timeout_minutes }}
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: {{ python | yaml }}
      - name: Install ix
        id: install
        run: {{ scripts[0] | yaml }}
      - name: Run the experiments
{% if secrets %}
        env:
{% for name in secrets %}
          {{ name }}: ${{ '{{' }} secrets.{{ name }} {{ '}}' }}
{% endfor %}
{% endif %}
        run: {{ scripts[1] | literal(10) }}
{% for gate in gates %}
      - name: {{ ('Gate ' ~ gate.experiment ~ ' against ' ~ gate.tag) | yaml }}
        if: {{ if_installed }}
        working-directory: {{ gate.folder | yaml }}
        run: {{ scripts[loop.index0 + 2] | yaml }}
{% endfor %}
{% for gate in gates %}
      - name: {{ ('Summarise ' ~ gate.experiment) | yaml }}
        if: {{ if_installed }}
        working-directory: {{ gate.folder | yaml }}
        run: {{ scripts[loop.index0 + 2 + gates | length] | literal(10) }}
{% endfor %}
{% if pr_comment %}
      - name: Comment on the pull request
        if: {{ if_pull_request }}
        env:
          GITHUB_TOKEN: {{ job_token }}
        run: {{ scripts[-1] | yaml }}
{% endif %}
      - name: Upload the reports (HTML, and Markdown for the summary)
        if: {{ if_installed }}
        uses: actions/upload-artifact@v4
        with:
          name: ix-reports
          path: {{ reports }}/
          if-no-files-found: warn
          retention-days: 30
"""

_GITLAB = _HEADER.replace("{{ review }}", "merge requests").replace(
    "{{ where }}", "Settings > CI/CD > Variables, masked") + """\
# GitLab reads no schedule from this file: add one under Build > Pipeline schedules
# with the cron line {{ schedule }} (timezone UTC).
ix:
  image: {{ ('python:' ~ python) | yaml }}
  rules:
    - if: $CI_PIPELINE_SOURCE == "schedule"
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
    - if: $CI_PIPELINE_SOURCE == "web"
  interruptible: true
  timeout: {{ timeout_minutes }}m
  script:
    - {{ scripts[0] | yaml }}
    - {{ scripts[1] | yaml }}
    # every gate runs, then the job exits with the last failure's code (1: a regression)
{% for line in scripts[2:] %}
    - {{ line | yaml }}
{% endfor %}
  artifacts:
    name: ix-reports
    when: always
    expire_in: 30 days
    paths:
      - {{ reports }}/
"""
