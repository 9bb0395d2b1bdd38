"""`ix.Experiment`: an experiment written in Python instead of YAML (DESIGN.md §9).

    import ix
    exp = ix.Experiment(
        "greeter",
        cases=[{"id": "must-001", "expectation": "must_trigger", "prompt": "Say hello"},
               {"id": "not-001", "expectation": "should_not_trigger", "prompt": "Add 2+2"}],
        subjects=[{"name": "v1"}],
        runtime=MyRuntime(),                 # anything with `async invoke(...)`
        sensors=[{"kind": "matcher", "contains": "hello"}],
        trials=5, lab="my-lab")
    outcome = exp.run()                      # or: await exp.arun()
    outcome.summary["metrics"], outcome.results.activation_rate()

Every argument takes what `experiment.yaml` and a case's frontmatter take, as dicts (a case
dict adds `prompt`), or ix's own objects (`EvalCase`, `Subject`), or user objects that
satisfy the `ix.domain` protocols: a runtime (`invoke`; in `subjects`, a subject of its own,
named by its `name` or its class), a sensor (`name`, `sense`), a scorer (`verdict`), a
reporter (`write`), a probe (`generate()`, whose cases become the experiment's) — or
`probe=` as experiment.yaml's `probe:` (`{"kind": "paraphrase", ...}`, generated when the
run starts). The experiment is written as the files a YAML experiment is made of —
`<lab>/<name>/experiment.yaml` and `cases/*.md` — and run by the same code as `ix run`, so
the same name, cases, seed and runtime give the same trial records either way. `scorers=` is
experiment.yaml's `scorers:` (the first decides each case: docs/experiments.md, "Scorers");
`reporter=` its `reporters:` (one, or a list: the files written into the run folder at the
end, docs/reports.md). A runtime, sensor, scorer or reporter object is written as `{kind:
python, object: "mod:Class"}` (`ix.eval.live`): the folder documents it, and only this
program can run it. Without `lab=` the files go to a temporary lab that lives as long as the
returned `ExperimentRun`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ix.api.experiments import arun, run
from ix.api.options import Observer, RunOptions
from ix.api.results import ResultSet, query_results
from ix.domain.errors import ConfigError
from ix.domain.types import Subject
from ix.engine.plan import Overrides
from ix.engine.run import RunResult
from ix.eval.live import KIND, object_ref, using
from ix.eval.models import EvalCase
from ix.fs.files import write_text_atomic
from ix.fs.names import check_name, name_problem
from ix.fs.paths import FILE, FOLDER, UnsafePath, check_entry
from ix.fs.resolve import EXPERIMENT_FILE
from ix.fs.yamlio import dump_yaml, read_text

__all__ = ["Experiment", "ExperimentRun"]

#: The first line of an experiment.yaml that `ix.Experiment` wrote (and may write again).
MARK = "# Written by ix.Experiment: change the program that made it, not this file."
#: Its second line: the case files it wrote, `# cases: ["must-001.md", ...]` (JSON), the
#: only ones a rewrite removes.
LISTED = "# cases: "
#: The method a user object must have, by what it is given as.
_METHODS = {"runtime": "invoke", "sensor": "sense", "scorer": "verdict", "reporter": "write"}


@dataclass
class ExperimentRun:
    """One run of an `ix.Experiment`: the engine's result, the summary, the run's trials."""

    result: RunResult
    results: ResultSet
    folder: Path
    _keep: Any = field(default=None, repr=False)  # the temporary lab, while this lives

    @property
    def summary(self) -> dict[str, Any]:
        return dict(self.result.summary)

    @property
    def run_id(self) -> str:
        return self.result.run_id

    @property
    def status(self) -> str:
        return self.result.status


class Experiment:
    """An experiment built in code; `run()` / `await arun()` run it (see the module)."""

    def __init__(self, name: str, cases: Iterable[Any] | None = None, probe: Any = None,
                 subjects: Sequence[Any] | None = None, runtime: Any = None,
                 sensors: Sequence[Any] | None = None, trials: int | str = 5, seed: int = 0,
                 goal: Mapping[str, Any] | None = None, lab: str | Path | None = None, *,
                 description: str = "", skill: str | None = None,
                 concurrency: int | None = None, timeout_s: float | None = None,
                 seeding: str | None = None, scorers: Sequence[Any] | None = None,
                 reporter: Any = None):
        self.name = check_name(name, what="experiment name", field="name")
        declared = isinstance(probe, str | Mapping)  # `probe:` of experiment.yaml
        if cases is None and (probe is None or declared):
            raise ConfigError("give the cases (a list) or a probe object that generates them",
                              field="cases")
        if cases is not None and probe is not None and not declared:
            raise ConfigError("give the cases or a probe object, not both", field="probe")
        self.cases, self.probe = cases, probe
        self.subjects, self.runtime, self.sensors = subjects, runtime, sensors
        self.trials, self.seed, self.goal, self.lab = trials, seed, goal, lab
        self.description, self.skill = description, skill
        self.concurrency, self.timeout_s, self.seeding = concurrency, timeout_s, seeding
        self.scorers = scorers
        # one reporter, or several (`reporters:` of experiment.yaml)
        self.reporters = (list(reporter) if isinstance(reporter, list | tuple)
                          else [] if reporter is None else [reporter])
        self._live: dict[str, Any] = {}

    # --- the files ------------------------------------------------------------------------

    def _object(self, value: Any, what: str) -> Any:
        """A dict or a kind as written; a user object as `{kind: python, object: ref}`."""
        if value is None or isinstance(value, str | Mapping):
            return dict(value) if isinstance(value, Mapping) else value
        needed = _METHODS[what]
        if not hasattr(value, needed):
            raise ConfigError(f"a {what} is a kind, a mapping with a kind, or an object with "
                              f"`{needed}`; got {type(value).__name__}", field=what)
        ref = object_ref(value, self._live)
        self._live[ref] = value
        return {"kind": KIND, "object": ref}

    def _subject(self, value: Any, i: int) -> Any:
        if isinstance(value, str):
            return value  # a registry profile
        if hasattr(value, "invoke"):  # a runtime object is a subject of its own
            name = getattr(value, "name", None) or type(value).__name__
            own: dict[str, Any] = {"name": name, "runtime": self._object(value, "runtime")}
            if getattr(value, "description", None):
                own["description"] = value.description
            return own
        if isinstance(value, Subject):
            config = dict(value.config)
            out: dict[str, Any] = {"name": value.name}
            if value.description:
                out["description"] = value.description
            for key in ("runtime", "model", "skills"):
                if config.get(key) is not None:
                    out[key] = config.pop(key)
            if config:
                out["config"] = config
            value = out
        if not isinstance(value, Mapping):
            raise ConfigError(f"a subject is a name, a mapping or an ix Subject; got "
                              f"{type(value).__name__}", field=f"subjects[{i}]")
        data = dict(value)
        if "runtime" in data:
            data["runtime"] = self._object(data["runtime"], "runtime")
        return data

    def config(self) -> dict[str, Any]:
        """experiment.yaml as a mapping (user objects as `python` kinds)."""
        self._live = {}
        data: dict[str, Any] = {"name": self.name}
        if self.description:
            data["description"] = self.description
        if self.skill is not None:
            data["skill"] = self.skill
        if self.runtime is not None:
            data["runtime"] = self._object(self.runtime, "runtime")
        if self.subjects:
            data["subjects"] = [self._subject(s, i) for i, s in enumerate(self.subjects)]
        sensors = [self._object(s, "sensor") for s in self.sensors or ()]
        if len(sensors) == 1:
            data["sensor"] = sensors[0]
        elif sensors:
            data["sensors"] = sensors
        data["trials"] = self.trials
        data["seed"] = self.seed
        for key in ("seeding", "concurrency", "timeout_s"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        if self.goal is not None:
            data["goal"] = dict(self.goal)
        if self.scorers:
            data["scorers"] = [self._object(s, "scorer") for s in self.scorers]
        if self.reporters:
            data["reporters"] = [self._object(r, "reporter") for r in self.reporters]
        if isinstance(self.probe, str | Mapping):  # generated when the run starts
            data["probe"] = self.probe if isinstance(self.probe, str) else dict(self.probe)
        return data

    def case_files(self) -> dict[str, str]:
        """`cases/<id>.md` of each case: frontmatter, then the prompt."""
        cases = self.cases if self.cases is not None else self._generated()
        assert cases is not None
        files: dict[str, str] = {}
        for i, case in enumerate(cases):
            meta, prompt = _case(case, i)
            case_id = check_name(meta.get("id", f"case-{i + 1:03d}"), what="case id",
                                 field=f"cases[{i}].id")
            meta["id"] = case_id
            if f"{case_id}.md" in files:
                raise ConfigError(f"two cases have the id {case_id!r}", field=f"cases[{i}].id")
            files[f"{case_id}.md"] = f"---\n{dump_yaml(meta)}---\n{prompt}\n"
        if not files:
            raise ConfigError("no cases: the list is empty" if self.cases is not None
                              else "the probe generated no cases", field="cases")
        return files

    def _generated(self) -> list[Any]:
        generate = getattr(self.probe, "generate", None)
        if not callable(generate):
            raise ConfigError(f"a probe has `generate()`; got {type(self.probe).__name__}",
                              field="probe")
        return list(generate())

    def write(self, lab: str | Path | None = None) -> Path:
        """Write `<lab>/<name>/` (experiment.yaml, cases/) and return the folder. Only a
        folder that is absent (or empty) or that ix.Experiment wrote (the MARK on
        experiment.yaml's first line) is written; nothing is written through a symlink. A
        rewrite replaces each case file atomically and removes only the case files it wrote
        before (listed on experiment.yaml's second line), so a case no longer given goes
        and a file the user put there stays; `results/` is kept, as a YAML experiment's is
        when its files change. Every refusal is a ConfigError raised before anything is
        written."""
        root = Path(lab if lab is not None else self.lab or ".").expanduser()
        folder = root / self.name
        config_file = folder / EXPERIMENT_FILE
        config = dump_yaml(self.config())
        files = self.case_files()
        cases = folder / "cases"
        before = _written_before(folder, config_file)
        for i, file_name in enumerate(files):
            _entry(cases / file_name, FILE, f"cases[{i}].id")
        for file_name in before - files.keys():
            _entry(cases / file_name, FILE, "cases")

        def text(listed: Iterable[str]) -> str:
            names = json.dumps(sorted(listed), ensure_ascii=False)
            return f"{MARK}\n{LISTED}{names}\n{config}"

        # the list first names every file that may stand there, so a rewrite cut short
        # leaves none that the next one would not remove
        write_text_atomic(config_file, text(before | files.keys()), shared=True)
        for file_name, body in files.items():
            write_text_atomic(cases / file_name, body, shared=True)
        gone = before - files.keys()
        for file_name in gone:
            (cases / file_name).unlink(missing_ok=True)
        if gone:
            write_text_atomic(config_file, text(files), shared=True)
        return folder

    # --- running --------------------------------------------------------------------------

    def _prepared(self) -> tuple[Path, Path, Any]:
        keep = None
        if self.lab is None:
            keep = tempfile.TemporaryDirectory(prefix="ix-experiment-")
            lab = Path(keep.name)
        else:
            lab = Path(self.lab).expanduser()
            lab.mkdir(parents=True, exist_ok=True)
        return lab, self.write(lab), keep

    def run(self, *, options: RunOptions | None = None,
            observer: Observer | None = None) -> ExperimentRun:
        """Write the experiment, run it as `ix run` would, and return the run."""
        lab, folder, keep = self._prepared()
        options = options or RunOptions(command=["ix.Experiment.run", self.name])
        with using(self._live):
            (result,) = run(lab, [str(folder)], Overrides(), options=options,
                            observer=observer)
        return self._outcome(result, lab, folder, keep)

    async def arun(self, *, options: RunOptions | None = None,
                   observer: Observer | None = None) -> ExperimentRun:
        """`run` on the running asyncio loop (`ix.api.arun`)."""
        lab, folder, keep = self._prepared()
        options = options or RunOptions(command=["ix.Experiment.arun", self.name])
        with using(self._live):
            (result,) = await arun(lab, [str(folder)], Overrides(), options=options,
                                   observer=observer)
        return self._outcome(result, lab, folder, keep)

    def _outcome(self, result: RunResult, lab: Path, folder: Path, keep: Any) -> ExperimentRun:
        results = query_results(lab, experiment=self.name, run=result.run_id)
        return ExperimentRun(result=result, results=results, folder=folder, _keep=keep)


def _entry(path: Path, kind: str, field: str) -> bool:
    """`check_entry` (whether `path` exists; a symlink, or not a `kind`, refused) with the
    refusal naming `field`."""
    try:
        return check_entry(path, kind)
    except UnsafePath as exc:
        raise UnsafePath(exc.message, file=path, field=field) from None


def _written_before(folder: Path, config_file: Path) -> set[str]:
    """The case files ix.Experiment wrote in `folder` before (none when the folder is absent
    or empty); a ConfigError when the folder is not its own to write."""
    if not _entry(folder, FOLDER, "name"):
        return set()
    if not _entry(config_file, FILE, "name"):
        with os.scandir(folder) as entries:
            if next(entries, None) is None:
                return set()
        raise ConfigError(f"{folder} is not empty and holds no {EXPERIMENT_FILE}, so "
                          "ix.Experiment did not write it; give another name or lab, it is "
                          "never overwritten", file=folder, field="name")
    lines = read_text(config_file).splitlines()
    if not lines or lines[0] != MARK:
        raise ConfigError(f"{folder} holds an experiment that ix.Experiment did not write; "
                          "give another name or lab, it is never overwritten",
                          file=config_file, field="name")
    _entry(folder / "cases", FOLDER, "cases")
    if len(lines) < 2 or not lines[1].startswith(LISTED):
        return set()  # written before ix listed its case files: it removes none of them
    try:
        names = json.loads(lines[1][len(LISTED):])
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(
            isinstance(n, str) and n.endswith(".md") and name_problem(n[:-3]) is None
            for n in names):
        raise ConfigError(f"line 2 is not the list of case files ix.Experiment wrote "
                          f"({LISTED.strip()} [\"<id>.md\", ...]); remove {folder} to start "
                          "again", file=config_file, field="cases")
    return set(names)


def _case(case: Any, i: int) -> tuple[dict[str, Any], str]:
    """(frontmatter, prompt) of a case given as a mapping or an `EvalCase`."""
    if isinstance(case, EvalCase):
        meta: dict[str, Any] = {"id": case.id, "expectation": case.expectation}
        if case.history:
            meta["history"] = [_turn(t) for t in case.history]
        for key in ("rationale", "difficulty"):
            if getattr(case, key):
                meta[key] = getattr(case, key)
        if case.tags:
            meta["tags"] = list(case.tags)
        if case.metadata:
            meta["metadata"] = dict(case.metadata)
        return meta, case.prompt
    if not isinstance(case, Mapping):
        raise ConfigError(f"a case is a mapping (its frontmatter keys and `prompt`) or an "
                          f"EvalCase; got {type(case).__name__}", field=f"cases[{i}]")
    meta = {k: v for k, v in case.items() if k != "prompt"}
    prompt = case.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError("needs a `prompt` (the text sent)", field=f"cases[{i}].prompt")
    return meta, prompt.strip()


def _turn(turn: Any) -> dict[str, Any]:
    if turn.role == "user":
        return {"user": turn.content}
    out: dict[str, Any] = {"assistant": turn.content}
    if turn.tool_calls:
        out["tool_calls"] = [{"name": c.name, "input": dict(c.input), "result": c.result}
                             for c in turn.tool_calls]
    return out
