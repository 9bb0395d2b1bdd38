"""A run as a local MLflow tracking folder (`ix export RUN --format mlflow --out DIR`);
docs/export.md, "MLflow".

Written by MLflow's own client (`mlflow-skinny`, the extra `ix-lab[mlflow]`), so the folder
is what MLflow writes and reads, whatever its version: an MLflow experiment named after the
ix experiment, one parent MLflow run for the ix run (its artifacts: summary.json,
summary.csv, report.md) and, nested under it, one MLflow run per subject — MLflow compares
runs, and the subjects are what a reader compares. A subject's metrics are the rows of its
`summary.csv` (`ix.eval.summary_table`), each interval as two more metrics
(`<name>_ci_low`, `<name>_ci_high`); an undefined value is not logged.

MLflow 3 keeps its file store in "maintenance mode" behind `MLFLOW_ALLOW_FILE_STORE=true`:
the export sets it for its own writes, and a reader sets it too (docs/export.md).
"""

import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.eval.summary_table import MetricRow, summary_rows

#: the tag every MLflow run of an ix run carries: how a second export of it is found
RUN_TAG = "ix.run_id"
_ALLOW = "MLFLOW_ALLOW_FILE_STORE"
_NOT_ALLOWED = re.compile(r"[^0-9A-Za-z_\-. /]+")
_RENAMES = (("@", "_at_"), ("^", "_hat_"), ("≤", "le"), ("≥", "ge"))


def _mlflow() -> Any:
    """MLflow's client module, or exit 2 telling the user which extra brings it."""
    try:
        from mlflow import tracking  # an optional extra: imported only when exporting
    except ImportError:
        raise ConfigError("--format mlflow needs MLflow's client: pip install "
                          "'ix-lab[mlflow]'", field="--format") from None
    return tracking


@contextmanager
def _file_store_allowed() -> Iterator[None]:
    saved = os.environ.get(_ALLOW)
    os.environ[_ALLOW] = "true"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(_ALLOW, None)
        else:
            os.environ[_ALLOW] = saved


def metric_name(name: str) -> str:
    """An ix metric's name as MLflow accepts one (letters, digits, `_ - . / ` and space):
    `pass@3` → `pass_at_3`, `pass^3` → `pass_hat_3`, `sla[p95 ≤ 200 ms]` →
    `sla_p95 le 200 ms`."""
    for old, new in _RENAMES:
        name = name.replace(old, new)
    return _NOT_ALLOWED.sub("_", name).strip("_ ") or "metric"


def subject_metrics(rows: Sequence[MetricRow]) -> dict[str, float]:
    """A subject's rows as MLflow metrics: each value, and its interval's ends beside it."""
    metrics: dict[str, float] = {}
    for row in rows:
        name = metric_name(row.metric)
        for key, value in ((name, row.value), (f"{name}_ci_low", row.ci_low),
                           (f"{name}_ci_high", row.ci_high)):
            if value is not None:
                metrics[key] = float(value)
    return metrics


def _millis(stamp: Any) -> int | None:
    if not isinstance(stamp, str):
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def subject_params(spec: Mapping[str, Any], subject: str) -> dict[str, str]:
    """What the spec says of one subject: its runtime kind and model."""
    config = spec.get("config") or {}
    for entry in config.get("subjects") or []:
        if isinstance(entry, dict) and entry.get("name") == subject:
            runtime = entry.get("runtime") or {}
            out = {"runtime": str(runtime.get("kind") or "")}
            model = entry.get("model") or runtime.get("model")
            if model:
                out["model"] = str(model)
            return out
    return {}


def _verdict(summary: Mapping[str, Any]) -> str | None:
    goal = summary.get("goal")
    return str(goal.get("verdict")) if isinstance(goal, dict) and goal.get("verdict") else None


def write_mlflow(out: Path, *, run_id: str, experiment: str, spec: Mapping[str, Any],
                 summary: Mapping[str, Any], artifacts: Sequence[tuple[str, str]],
                 force: bool = False) -> list[str]:
    """The ix run into the tracking folder `out` (made if missing; an existing one keeps its
    runs and gets these added). An ix run already in it is refused unless `force`. Returns
    the MLflow run ids, the parent's first. On a failure, what this export made is removed."""
    tracking = _mlflow()
    made_folder = not out.exists()
    created: list[Path] = []
    with _file_store_allowed():
        client = tracking.MlflowClient(tracking_uri=out.as_uri())
        try:
            found = client.get_experiment_by_name(experiment)
            exp_id = found.experiment_id if found is not None \
                else client.create_experiment(experiment)
            if found is not None and not force:
                earlier = client.search_runs([exp_id], f"tags.`{RUN_TAG}` = '{run_id}'",
                                             max_results=1)
                if earlier:
                    raise ConfigError(f"{out} already holds ix run {run_id} (MLflow run "
                                      f"{earlier[0].info.run_id}); pass --force to add it "
                                      "again", field="--out")
            return _write_runs(client, out, exp_id, created, run_id=run_id,
                               experiment=experiment, spec=spec, summary=summary,
                               artifacts=artifacts)
        except BaseException:
            if made_folder:
                shutil.rmtree(out, ignore_errors=True)
            else:
                for folder in created:
                    shutil.rmtree(folder, ignore_errors=True)
            raise


def _write_runs(client: Any, out: Path, exp_id: str, created: list[Path], *, run_id: str,
                experiment: str, spec: Mapping[str, Any], summary: Mapping[str, Any],
                artifacts: Sequence[tuple[str, str]]) -> list[str]:
    from mlflow.entities import Metric, Param  # the optional extra, as above

    start, end = _millis(summary.get("started_at")), _millis(summary.get("finished_at"))
    stamp = end or start or 0
    status = "FINISHED" if summary.get("run_status") == "completed" else "KILLED" \
        if summary.get("run_status") == "cancelled" else "FAILED"
    verdict = _verdict(summary)
    common = {"experiment": experiment, "seed": str(summary.get("seed")),
              "trials_per_case": str(summary.get("trials_per_case"))}
    tags = {RUN_TAG: run_id, "ix.run_status": str(summary.get("run_status"))}
    if verdict is not None:
        tags["ix.verdict"] = verdict
    parent = client.create_run(exp_id, start_time=start, run_name=run_id,
                               tags={**tags, "ix.level": "run"})
    created.append(out / exp_id / parent.info.run_id)
    subjects = [str(b.get("name")) for b in summary.get("subjects") or []]
    client.log_batch(parent.info.run_id, params=[
        Param(k, v) for k, v in {**common, "subjects": ", ".join(subjects)}.items()])
    with tempfile.TemporaryDirectory(prefix="ix-mlflow-") as tmp:
        for name, text in artifacts:
            (Path(tmp) / name).write_text(text, encoding="utf-8")
            client.log_artifact(parent.info.run_id, str(Path(tmp) / name))
    ids = [parent.info.run_id]
    rows = summary_rows(summary)
    blocks = {str(b.get("name")): b for b in summary.get("subjects") or []}
    for subject in subjects:
        block = blocks[subject]
        child_tags = {**tags, "ix.level": "subject", "ix.subject": subject,
                      "mlflow.parentRunId": parent.info.run_id}
        status_word = (block.get("interpretation") or {}).get("status")
        if status_word:
            child_tags["ix.status"] = str(status_word)
        child = client.create_run(exp_id, start_time=start, run_name=subject,
                                  tags=child_tags)
        created.append(out / exp_id / child.info.run_id)
        params = {**common, "subject": subject, **subject_params(spec, subject)}
        metrics = subject_metrics([r for r in rows if r.subject == subject])
        client.log_batch(child.info.run_id,
                         metrics=[Metric(k, v, stamp, 0) for k, v in metrics.items()],
                         params=[Param(k, v) for k, v in params.items()])
        client.set_terminated(child.info.run_id, status, end_time=end)
        ids.append(child.info.run_id)
    client.set_terminated(parent.info.run_id, status, end_time=end)
    return ids


__all__ = ["RUN_TAG", "metric_name", "subject_metrics", "subject_params", "write_mlflow"]
