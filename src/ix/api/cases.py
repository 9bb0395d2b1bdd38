"""`ix cases import`: a table of cases (CSV, JSONL, JSON, Parquet, skill-creator's eval sets)
written as an experiment's case files (docs/experiments.md, "Cases from a table").

Every row is checked first (`ix.fs.case_tables`, then as a case file's frontmatter is); a
problem anywhere, or a case file that exists already without `force`, writes nothing.
"""

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ix.api.loading import resolve
from ix.domain.errors import ConfigError, raise_all
from ix.engine.probes import PROBES_DIR, REVIEWS, drafts
from ix.eval.models import EvalCase
from ix.fs.appending import append_line
from ix.fs.case_tables import load_case_table
from ix.fs.files import write_text_atomic
from ix.fs.frontmatter import read_frontmatter
from ix.fs.names import file_part
from ix.fs.resolve import EXPERIMENT_FILE
from ix.fs.yamlio import dump_yaml, load_yaml_file
from ix.lab.schema import CaseSpec, validate
from ix.store.layout import ExperimentDir

if TYPE_CHECKING:
    from ix.api.schemas import CasesImported

__all__ = ["ImportedCases", "decide_draft", "draft_cases", "import_cases"]


@dataclass(frozen=True)
class ImportedCases:
    """What `import_cases` wrote (or with `dry_run` would write)."""

    experiment: Path
    folder: Path
    source: Path
    format: str
    written: tuple[Path, ...]
    overwritten: tuple[Path, ...]
    unmapped: tuple[str, ...]
    dry_run: bool

    def as_dict(self) -> "CasesImported":
        return {"experiment": self.experiment.name, "experiment_dir": str(self.experiment),
                "folder": str(self.folder), "source": str(self.source), "format": self.format,
                "cases": len(self.written), "written": [str(p) for p in self.written],
                "overwritten": [str(p) for p in self.overwritten],
                "unmapped_columns": list(self.unmapped), "dry_run": self.dry_run}


def import_cases(file: str | Path, experiment: str, *, lab: str | Path | None = None,
                 map: str | None = None, force: bool = False, dry_run: bool = False,
                 cwd: Path | None = None) -> ImportedCases:
    """Write each row of the table `file` as `<suite>/<id>.md` of `experiment` (its
    `cases.suite`, else `cases/`): frontmatter, then the prompt. A `ConfigError` (every problem
    of the table at once) before anything is written: a bad row, an id another case file
    holds, or a case file that exists already (unless `force`)."""
    cwd = (cwd or Path.cwd()).resolve()
    source = Path(file).expanduser()
    source = source if source.is_absolute() else cwd / source
    _, (path,) = resolve(lab, [experiment], cwd=cwd)
    table = load_case_table(source, map, where="--map")
    folder = _suite(path)
    held = _held_ids(folder)
    texts: dict[Path, str] = {}
    problems: list[ConfigError] = []
    for case in table.cases:
        validate(CaseSpec, case.meta, file=f"{source} {case.where}", what="case")
        target = folder / f"{file_part(case.meta['id'])}.md"
        other = held.get(case.meta["id"])
        if other is not None and other != target:
            problems.append(ConfigError(f"case id {case.meta['id']!r} is the id of {other} "
                                        "already", file=source, field=case.where))
        texts[target] = f"---\n{dump_yaml(case.meta)}---\n{case.prompt}\n"
    raise_all(problems)
    existing = tuple(p for p in texts if p.exists())
    if existing and not force:
        names = ", ".join(p.name for p in existing[:5]) + (", ..." if len(existing) > 5 else "")
        raise ConfigError(f"{len(existing)} case file(s) exist already in {folder} ({names}); "
                          "pass --force to overwrite them", field="--force")
    if not dry_run:
        for target, text in texts.items():
            write_text_atomic(target, text, shared=True)
    return ImportedCases(path, folder, source, table.format, tuple(texts), existing,
                         table.unmapped, dry_run)


def _suite(experiment: Path) -> Path:
    """The experiment's case folder: `cases.suite` of experiment.yaml, else `cases/`."""
    data: Any = load_yaml_file(experiment / EXPERIMENT_FILE)
    cases = data.get("cases") if isinstance(data, dict) else None
    suite = cases.get("suite") if isinstance(cases, dict) else None
    folder = (experiment / (suite if isinstance(suite, str) and suite else "cases")).resolve()
    if not folder.is_relative_to(experiment.resolve()):
        raise ConfigError("must be a folder inside the experiment",
                          file=experiment / EXPERIMENT_FILE, field="cases.suite")
    return folder


def _held_ids(folder: Path) -> dict[str, Path]:
    """The id of each case file already in `folder` (its `id:`, else its name)."""
    held: dict[str, Path] = {}
    for p in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        try:
            meta, _ = read_frontmatter(p)
        except ConfigError:
            continue
        given = meta.get("id")
        held[given if isinstance(given, str) else p.stem] = p
    return held


def draft_cases(experiment: str, *, lab: str | Path | None = None,
                cwd: Path | None = None) -> tuple[Path, list[EvalCase]]:
    """The experiment's folder and the cases its `generate` probe made that no one has
    reviewed yet (docs/experiments.md, "Generated cases")."""
    _, (path,) = resolve(lab, [experiment], cwd=cwd)
    return path, drafts(path)


def decide_draft(experiment: Path, case: EvalCase, decision: str) -> Path | None:
    """`accept`: the case becomes a case file of the experiment (`<id>.md`, its
    `generated_by` kept, no longer a draft); `drop`: it never runs. The decision is appended
    to the probe's review log; the case file's path, for `accept`."""
    if decision not in ("accept", "drop"):
        raise ConfigError(f"decide accept or drop, not {decision!r}", field="decision")
    written = None
    if decision == "accept":
        written = _suite(experiment) / f"{file_part(case.id)}.md"
        if written.exists():
            raise ConfigError(f"{written} exists already; rename the case file or drop the "
                              "draft", file=written)
        meta: dict[str, Any] = {"expectation": case.expectation, "tags": list(case.tags),
                                "metadata": {k: v for k, v in case.metadata.items()
                                             if k != "status"}}
        write_text_atomic(written, f"---\n{dump_yaml(meta)}---\n{case.prompt}\n", shared=True)
    log = ExperimentDir.at(experiment).results / PROBES_DIR / REVIEWS
    append_line(log, json.dumps({"id": case.id, "decision": decision,
                                 "at": datetime.now(UTC).isoformat(timespec="seconds")}) + "\n")
    return written
