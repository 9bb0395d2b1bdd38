"""`ix report --sessions`: a longitudinal study's sessions so far and each subject's trend
over time (`sessions:` in experiment.yaml; ix.eval.sessions holds the statistics).

The sessions are the experiment's completed runs, timed by their `spec.yaml`'s `started_at`;
"now" (for when the next session is due) is the caller's clock, so a test replays a study
without waiting for it.
"""

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ix.api.loading import resolve
from ix.domain.errors import ConfigError
from ix.eval.sessions import Session, SessionsSpec, case_rights, sessions_block
from ix.fs.resolve import EXPERIMENT_FILE
from ix.lab.loader import load_experiment
from ix.store.layout import ExperimentDir
from ix.store.lookup import is_completed, run_folders
from ix.store.spec import read_spec
from ix.store.summaries import read_summary

__all__ = ["read_sessions", "sessions_report"]


def _time(text: Any, where: Path) -> datetime:
    try:
        t = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"started_at {text!r} is not an ISO-8601 time", file=where,
                          field="started_at") from None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def read_sessions(experiment: Path) -> list[Session]:
    """The experiment's completed runs as sessions, oldest first: each run's start time and
    its subjects' (right, valid) counts per case."""
    out = []
    for folder in run_folders(ExperimentDir.at(experiment).results):
        if not is_completed(folder):
            continue
        spec = read_spec(folder)
        summary = read_summary(folder)
        subjects = {str(b["name"]): case_rights(b["probe_results"])
                    for b in summary.get("subjects") or []}
        out.append(Session(run_id=folder.name,
                           started_at=_time(spec.get("started_at"), folder / "spec.yaml"),
                           subjects=subjects))
    return out


def sessions_report(lab: str | Path | None = None, experiments: Sequence[str] = (), *,
                    now: datetime | None = None, cwd: Path | None = None
                    ) -> list[dict[str, Any]]:
    """One block per chosen experiment that has `sessions:` (ix.eval.sessions_block, with
    `experiment` and `path`). ConfigError when none of them has."""
    lab_path, paths = resolve(lab, experiments, cwd=cwd)
    now = now or datetime.now(UTC)
    blocks = []
    for path in paths:
        loaded = load_experiment(path, lab_path)
        spec: SessionsSpec | None = loaded.spec.sessions
        if spec is None:
            continue
        block = sessions_block(spec, read_sessions(path), now)
        blocks.append({"experiment": loaded.experiment.name, "path": str(path), **block})
    if not blocks:
        where = paths[0] / EXPERIMENT_FILE if len(paths) == 1 else lab_path
        raise ConfigError("no experiment here is a longitudinal study: add "
                          "`sessions: {every: 1w, count: 8}` to its experiment.yaml",
                          file=where, field="sessions")
    return blocks
