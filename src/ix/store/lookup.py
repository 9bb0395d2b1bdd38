"""Every way a run is found: by id (or a unique prefix or suffix of one), by tag, by path,
and "the latest" — in one experiment, in the lab, or for `ix report`'s argument.

"Latest" means one thing everywhere: of the runs that qualify, the one whose id sorts last.
A run id begins with its start time to the millisecond (`ix.store.runs.new_run_id`), so that
is the last one started. What qualifies is a predicate the caller names: any run folder
(`latest_run(results)`, the last run started: `ix ls`), one that wrote its summary
(`is_summarised`: it ended, completed or not, and can be read: `ix report`), one that ran to
its end (`is_completed`: `ix report EXPERIMENT`, `ix leaderboard`), one that ix executed
(`is_executed`: what `ix run --resume` continues). `lab_latest` is the same across a lab's
experiments.

A reference that came from outside (a URL, an MCP call) goes through `lab_run_folder`: never a
path, never a folder outside the lab once symlinks are resolved.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from ix.domain.errors import ConfigError, NotFound, Warn
from ix.fs.paths import lies_within
from ix.fs.resolve import list_experiments as experiment_dirs
from ix.fs.resolve import select_experiments
from ix.store.layout import RESULTS_DIR, RUNS_DIR, ExperimentDir, RunDir
from ix.store.spec import read_spec
from ix.store.tags import is_tag_name, read_tags, tag_folder


class RunNotFound(ConfigError, NotFound):
    """No run answers to a reference: a `ConfigError` as ever (exit 2, the same line), and a
    `NotFound` for the callers that answer "not found" (the viewer's 404)."""


#: A run id (`20261126T021500Z-3f9a1c`, or a prefix) or a tag name: nothing else reaches a lookup.
RUN_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def run_folders(results_dir: Path) -> list[Path]:
    """The run folders of an experiment's `results/`, oldest first: a run id sorts by its start
    (to the millisecond), so "the latest run" is the last one. None when there is no `runs/`."""
    runs = ExperimentDir(results_dir).runs
    if not runs.is_dir():
        return []
    return sorted((p for p in runs.iterdir() if p.is_dir()), key=lambda p: p.name)


def latest_run(results_dir: Path, keep: Callable[[Path], bool] | None = None) -> Path | None:
    """The experiment's last started run folder (that `keep` accepts), or None."""
    return next((p for p in reversed(run_folders(results_dir)) if keep is None or keep(p)),
                None)


def is_summarised(folder: Path) -> bool:
    """The run ended and wrote its summary (completed, cancelled or failed): it can be read."""
    return RunDir(folder).summary.is_file()


def is_completed(folder: Path) -> bool:
    """The run ran to its end (`status: completed` in its spec) and wrote its summary."""
    run = RunDir(folder)
    if not (run.summary.is_file() and run.spec.is_file()):
        return False
    try:
        return read_spec(folder).get("status") == "completed"
    except ConfigError:  # an unreadable spec: not a run one can call completed
        return False


def is_executed(folder: Path) -> bool:
    """ix ran the run (it has a spec that names no `imported_from`): a run `--resume` can
    continue, as an imported run has no plan of its own. An unreadable spec is a
    `ConfigError`: `--resume` names it rather than continue an older run."""
    return RunDir(folder).spec.is_file() and not read_spec(folder).get("imported_from")


def lab_run_folders(lab: Path) -> list[Path]:
    """Every run folder of the lab's experiments (`<experiment>/results/runs/<run_id>`), in
    path order; the lab's latest run is the one whose name (its start) sorts last."""
    return sorted(p for p in lab.glob(f"*/{RESULTS_DIR}/{RUNS_DIR}/*") if p.is_dir())


def matching_runs(ids: Iterable[str], ref: str) -> list[str]:
    """The run ids that `ref` names: the id itself if it is one, else every id that `ref`
    begins or ends (`20261126T08`, `b260b6`): any unique prefix or suffix names a run."""
    ids = list(ids)
    if ref in ids:
        return [ref]
    return sorted({i for i in ids if ref and (i.startswith(ref) or i.endswith(ref))})


def ambiguous(ref: str, hits: list[str], field: str = "RUN") -> ConfigError:
    """The error for a `ref` that names several runs: every candidate, so one can be pasted."""
    return ConfigError(f"{ref!r} names {len(hits)} runs: {', '.join(hits)}; give more of "
                       "the id (any unique prefix or suffix names a run)", field=field)


def experiment_run(results_dir: Path, ref: str, field: str = "--run") -> Path:
    """The run folder (with a `spec.yaml`) that `ref` — a run id, or a unique prefix or
    suffix of one — names in one experiment's `results/`; `RunNotFound` naming the latest
    five when none does, the candidates when several do."""
    runs = ExperimentDir(results_dir).runs
    run_id = ref
    if runs.is_dir():
        hits = matching_runs((p.name for p in run_folders(results_dir)), ref)
        if len(hits) > 1:
            raise ambiguous(ref, hits, field)
        run_id = hits[0] if hits else ref
    directory = runs / run_id
    if not RunDir(directory).spec.is_file():
        known = ", ".join(sorted(p.name for p in runs.iterdir())[-5:]) if runs.is_dir() else ""
        raise RunNotFound(f"no run {run_id!r} in {results_dir}"
                          + (f" (latest: {known})" if known else ""), field=field)
    return directory


def find_run(lab: Path, run_id: str) -> Path:
    """The run folder of `run_id` (or a unique prefix or suffix of it) in any experiment of
    the lab; an ambiguous one is a `ConfigError` listing the candidates."""
    given = Path(run_id)
    if given.is_dir() and RunDir(given).spec.is_file():
        return given.resolve()
    folders: dict[str, list[Path]] = {}
    for p in lab_run_folders(lab):
        folders.setdefault(p.name, []).append(p)
    hits = matching_runs(folders, run_id)
    if not hits:
        raise RunNotFound(f"no run {run_id!r} in lab {lab}", field="RUN")
    if len(hits) > 1:
        raise ambiguous(run_id, hits)
    return folders[hits[0]][0]


def resolve_run(lab: Path, ref: str) -> Path:
    """The run folder that `ref` names: a run folder's path, a tag of the lab, a run id or a
    unique prefix or suffix of one (in any experiment of the lab); `RunNotFound` if none."""
    given = Path(ref)
    if given.is_dir() and RunDir(given).spec.is_file():
        return given.resolve()
    if is_tag_name(ref):
        tag = read_tags(lab).get(ref)
        if tag is not None:
            return tag_folder(lab, tag)
    try:
        return find_run(lab, ref)  # a tag-like word may still be a run id's suffix (b260b6)
    except RunNotFound:
        if is_tag_name(ref):
            raise RunNotFound(f"no run or tag {ref!r} in lab {lab}", field="RUN") from None
        raise


def lab_run_folder(lab: Path, ref: str) -> Path:
    """The run that `ref` (a run id, a unique prefix of one, or a tag) names in the lab.

    Unlike `ix report`'s lookup, a path is never accepted and the folder must lie inside the
    lab once every symlink is resolved; otherwise (or when nothing matches) a `ConfigError`.
    """
    if not isinstance(ref, str) or not RUN_REF.fullmatch(ref) or ".." in ref:
        raise ConfigError(f"not a run id or tag: {ref!r}", field="RUN")
    folder = resolve_run(lab, ref)
    if not lies_within(folder, lab) or not folder.is_dir():
        raise ConfigError(f"run {ref!r} is not inside lab {lab}", field="RUN")
    return folder


def report_run(lab: Path, ref: str | None = None, *, cwd: Path | None = None,
               note: Warn | None = None, warn: Warn | None = None) -> Path:
    """The run `ix report [RUN|EXPERIMENT]` reads (docs/reports.md, "Which run").

    `ref` is first a run (folder, tag, id, unique prefix or suffix: a run wins over an
    experiment of the same name, and `note` says so), else an experiment (its folder's name or
    a path): its latest completed run, or its latest run with a summary, said in `note`.
    Without `ref`: the latest run of the experiment `cwd` is in, else the lab's latest run,
    said in `note`. Only runs with a summary count; a `ConfigError` when there is none.
    """
    if not ref:
        cwd = (cwd or Path.cwd()).resolve()
        paths = select_experiments(lab, (), cwd=cwd)
        if len(paths) == 1 and cwd.is_relative_to(paths[0]):
            return latest_of(paths[0], warn=warn)
        return lab_latest(lab, note)
    try:
        found = resolve_run(lab, ref)
    except ConfigError as exc:
        experiment = _experiment(lab, ref, cwd)
        if experiment is None and isinstance(exc, RunNotFound):
            raise RunNotFound(f"no run, tag or experiment {ref!r} in lab {lab}"
                              f"{_known(lab)}", field="RUN") from None
        if experiment is None:  # an ambiguous prefix, a broken tag: as it was
            raise
        return latest_of(experiment, completed=True, note=note)
    experiment = _experiment(lab, ref, cwd)
    if experiment is not None and note is not None:
        note(f"{ref!r} names run {found.name} (a run wins over an experiment); give a path "
             f"for experiment {experiment.name}'s latest run: ix report ./{experiment.name}")
    return found


def latest_of(experiment: Path, *, completed: bool = False, note: Warn | None = None,
              warn: Warn | None = None) -> Path:
    """The experiment's latest run with a summary; with `completed`, its latest completed
    run, else (said in `note`) its latest with a summary. A `ConfigError` if it has none."""
    results = ExperimentDir.at(experiment).results
    done = latest_run(results, is_summarised)
    if done is None:
        raise ConfigError(f"experiment {experiment.name} has no finished run yet "
                          f"(`ix run {experiment.name}` makes one)", field="RUN")
    if completed:
        best = latest_run(results, is_completed)
        if best is not None:
            return best
        if note is not None:
            note(f"experiment {experiment.name} has no completed run; reporting its latest, "
                 f"{done.name} ({_status(done)})")
        return done
    last = latest_run(results)
    if warn is not None and last != done and last is not None:
        warn(f"run {last.name} has no summary yet (still running?); reporting {done.name}")
    return done


def lab_latest(lab: Path, note: Warn | None) -> Path:
    """The lab's latest run with a summary, across its experiments (said in `note`)."""
    done = [p for p in lab_run_folders(lab) if is_summarised(p)]
    if not done:
        names = ", ".join(p.name for p in experiment_dirs(lab)) or "none"
        raise ConfigError(f"lab {lab} has no finished run yet: `ix run` runs every "
                          f"experiment, `ix run EXPERIMENT` one (experiments: {names})",
                          field="RUN")
    latest = max(done, key=lambda p: p.name)
    if note is not None:
        note(f"report of {RunDir(latest).experiment.path.name} run {latest.name}, the lab's "
             "latest")
    return latest


def _experiment(lab: Path, ref: str, cwd: Path | None) -> Path | None:
    """The experiment folder `ref` names (a name in the lab or a path), or None."""
    try:
        return select_experiments(lab, [ref], cwd=cwd)[0]
    except ConfigError:
        return None


def _known(lab: Path, runs: int = 3) -> str:
    """` (experiments: ...; latest runs: ...)`: what the lab has, for an unknown name."""
    names = ", ".join(p.name for p in experiment_dirs(lab)) or "none"
    latest = sorted(lab_run_folders(lab), key=lambda p: p.name)[-runs:]
    shown = ", ".join(f"{p.name} of {RunDir(p).experiment.path.name}"
                      for p in reversed(latest)) or "none"
    return f" (experiments: {names}; latest runs: {shown})"


def _status(folder: Path) -> str:
    try:
        return str(read_spec(folder).get("status") or "status unknown")
    except ConfigError:
        return "spec unreadable"
