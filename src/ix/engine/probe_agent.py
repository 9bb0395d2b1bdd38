"""`probe: {kind: agent, file: probes/skeptic.md, runtime: R, n: 3}`: a probe the user writes.

The file is markdown: a frontmatter and a body, the persona and its instructions.

```markdown
---
name: skeptic            # optional: names the cases it makes (default: the file's name)
description: a terse user who doubts the tool    # optional, for people
per: case                # case (default): rewrite each must / not case; suite: new cases
---
You are a senior engineer in a hurry who doubts that assistants help. ...
```

With `per: case` the runtime is asked once per must and should-not case (seeded from the
experiment's seed, the probe's name and the case id) for `n` versions of the request as the
persona would send it; each is a case `<id>~<name>-<i>` with the case's expectation, tags
and history, and `metadata.paraphrase_of` (one family with it, as a paraphrase is). With
`per: suite` it is asked once, with the skill under test's description, for `n` requests
that should use the skill and `n` that should not: `<name>-must-001`, `<name>-not-001`, ....
The answer is JSON (`{"prompts": [...]}`, or
`{"must": [...], "should_not": [...]}`), read strictly. The cases run like the suite's
(`ix.engine.probes` records them under `results/probes/`, the file's digest in the key, so
an edited persona asks again).
"""

import asyncio
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from ix.domain.errors import ConfigError, TrialError
from ix.domain.model import Model
from ix.engine.plan import derived_seed
from ix.engine.probe_asking import json_answer, question, runtime_spec
from ix.eval.models import EvalCase
from ix.eval.validation import from_validation_error
from ix.fs.frontmatter import read_frontmatter
from ix.fs.names import name_problem
from ix.lab.loader import LoadedExperiment
from ix.runtimes.registry import RuntimeContext, build_runtime

__all__ = ["AGENT", "AgentProbe", "agent_cases", "agent_digest", "check_agent", "read_agent",
           "skill_under_test"]

AGENT = "agent"
#: Between a case's id and its version's: `must-001~skeptic-2`.
SEPARATOR = "~"


class AgentOptions(Model):
    """`probe:`'s keys for `kind: agent`."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    #: the markdown file, relative to the experiment's folder, inside the lab
    file: str = Field(min_length=1)
    runtime: str = Field(min_length=1)
    n: int = Field(3, ge=1, le=20)


class AgentFrontmatter(Model):
    """The frontmatter of a probe agent's markdown file."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str | None = None
    description: str = ""
    per: Literal["case", "suite"] = "case"


class AgentProbe(Model):
    """A probe agent as read: its name, what it is asked per, its persona and instructions."""

    model_config = ConfigDict(frozen=True)

    name: str
    per: Literal["case", "suite"]
    persona: str
    file: Path
    n: int
    runtime: str


def _path(loaded: LoadedExperiment, file: str) -> Path:
    path = (loaded.path / file).resolve()
    if not path.is_relative_to(loaded.lab.resolve()):
        raise ConfigError(f"{file!r} is outside the lab: a probe agent's file lives in it",
                          file=loaded.config_file, field="probe.file")
    if not path.is_file():
        raise ConfigError(f"no file {file!r} in the experiment's folder ({path})",
                          file=loaded.config_file, field="probe.file")
    if path.suffix != ".md":
        raise ConfigError(f"{file!r} is not a .md file: a probe agent is markdown "
                          "(frontmatter, then its persona and instructions)",
                          file=loaded.config_file, field="probe.file")
    return path


def read_agent(loaded: LoadedExperiment, options: Mapping[str, Any]) -> AgentProbe:
    """The probe agent `options` names, checked: `ConfigError` naming experiment.yaml and
    `probe.<key>` for the options, the markdown file and its field for the file."""
    try:
        opts = AgentOptions.model_validate(dict(options))
    except ValidationError as exc:
        raise from_validation_error(exc, AgentOptions, prefix="probe").at(
            loaded.config_file) from None
    path = _path(loaded, opts.file)
    meta, body = read_frontmatter(path)
    try:
        front = AgentFrontmatter.model_validate(meta)
    except ValidationError as exc:
        raise from_validation_error(exc, AgentFrontmatter, file=path) from None
    name = front.name if front.name is not None else path.stem
    problem = name_problem(name)
    if problem is not None or SEPARATOR in name:
        raise ConfigError(f"invalid probe name {name!r}: {problem or 'it holds ~'}",
                          file=path, field="name")
    if not body.strip():
        raise ConfigError("the body is empty: write the persona and its instructions "
                          "below the frontmatter", file=path, field="body")
    return AgentProbe(name=name, per=front.per, persona=body.strip(), file=path, n=opts.n,
                      runtime=opts.runtime)


def check_agent(loaded: LoadedExperiment, options: Mapping[str, Any]) -> None:
    """What `ix validate` checks of a probe agent without asking it: its options, its file
    and the runtime it names."""
    runtime_spec(read_agent(loaded, options).runtime, loaded)


def agent_digest(loaded: LoadedExperiment, options: Mapping[str, Any]) -> str:
    """The sha256 of the agent's file: part of its record's key."""
    return hashlib.sha256(read_agent(loaded, options).file.read_bytes()).hexdigest()


def _case_request(agent: AgentProbe, prompt: str) -> str:
    return (f"{agent.persona}\n\nThe request below is one a user sent to an assistant. Write "
            f"{agent.n} different versions of it as you would send it, staying in your "
            "role: keep what it asks for, and every name, file and number in it. Do not "
            f'answer it.\n\nRequest: "{prompt}"\n\n'
            'Answer with JSON only, exactly: {"prompts": ["...", "..."]}')


def _suite_request(agent: AgentProbe, skill: str | None, description: str) -> str:
    about = (f"The skill under test is {skill!r}: {description}" if skill and description
             else f"The skill under test is {skill!r}." if skill else
             "Test whether the assistant uses its skill when, and only when, it should.")
    return (f"{agent.persona}\n\n{about}\n\nStaying in your role, write {agent.n} requests "
            f"that should make an assistant use this skill (must) and {agent.n} that should "
            "not, near misses among them (should_not). Do not answer them.\n\n"
            'Answer with JSON only, exactly: {"must": [...], "should_not": [...]}')


def _strings(data: Any, key: str, n: int) -> list[str]:
    items = data.get(key) if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ValueError(f'the answer must hold "{key}": [strings]')
    kept = list(dict.fromkeys(i.strip() for i in items if i.strip()))
    if len(kept) < n:
        raise ValueError(f'asked for {n} different "{key}", got {len(kept)}')
    return kept[:n]


def agent_cases(loaded: LoadedExperiment, cases: Sequence[EvalCase],
                options: Mapping[str, Any], skill: tuple[str | None, str] = (None, "")
                ) -> list[EvalCase]:
    """The cases the probe agent makes (asked now; `ix.engine.probes` records them).
    `skill`: the skill under test's name and description, for `per: suite`."""
    agent = read_agent(loaded, options)
    runtime = build_runtime(runtime_spec(agent.runtime, loaded), RuntimeContext())
    seed = loaded.experiment.seed

    async def ask(ask_id: str, prompt: str, key: str) -> str:
        subject, stimulus = question(agent.name, ask_id, prompt)
        obs = await runtime.invoke(subject, stimulus, seed=derived_seed(key), attempt=0)
        return obs.content or obs.stdout or obs.body or ""

    async def one(case: EvalCase) -> list[EvalCase]:
        try:
            text = await ask(f"{agent.name}-{case.id}", _case_request(agent, case.prompt),
                             f"{seed}:agent:{agent.name}:{case.id}")
            prompts = _strings(json_answer(text), "prompts", agent.n)
        except (TrialError, ValueError) as exc:
            raise ConfigError(f"probe agent {agent.name!r} failed on case {case.id!r}: "
                              f"{exc}", file=loaded.config_file, field="probe") from None
        return [case.model_copy(update={
            "id": f"{case.id}{SEPARATOR}{agent.name}-{i}", "prompt": text,
            "metadata": {**case.metadata, "paraphrase_of": case.id,
                         "probe_agent": agent.name}})
            for i, text in enumerate(prompts, 1)]

    async def every() -> list[EvalCase]:
        if agent.per == "case":
            return [c for group in await asyncio.gather(*(one(c) for c in cases))
                    for c in group]
        try:
            data = json_answer(await ask(agent.name, _suite_request(agent, *skill),
                                         f"{seed}:agent:{agent.name}"))
            made = {k: _strings(data, k, agent.n) for k in ("must", "should_not")}
        except (TrialError, ValueError) as exc:
            raise ConfigError(f"probe agent {agent.name!r} failed: {exc}",
                              file=loaded.config_file, field="probe") from None
        return [EvalCase(id=f"{agent.name}-{short}-{i:03d}", prompt=prompt,
                         expectation=expectation, metadata={"probe_agent": agent.name})
                for key, short, expectation in (("must", "must", "must_trigger"),
                                                ("should_not", "not", "should_not_trigger"))
                for i, prompt in enumerate(made[key], 1)]

    return asyncio.run(every())


def skill_under_test(loaded: LoadedExperiment) -> tuple[str | None, str]:
    """The skill under test's name and its SKILL.md description, when the lab has it."""
    exp = loaded.experiment
    skill = exp.skill or exp.sensor_options.get("skill") or next(
        (str(k.get("name")) for s in exp.subjects for k in s.config.get("skills") or ()
         if isinstance(k, Mapping)), None)
    if not skill:
        return None, ""
    for s in exp.subjects:
        for k in s.config.get("skills") or ():
            if isinstance(k, Mapping) and k.get("name") == skill:
                return str(skill), str(k.get("description") or "")
    path = loaded.lab / "skills" / str(skill) / "SKILL.md"
    meta, _ = read_frontmatter(path) if path.is_file() else ({}, "")
    return str(skill), str(meta.get("description") or "")
