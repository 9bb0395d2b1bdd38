"""`ix run` of an experiment that `ix import` made: refused while it cannot measure anything."""

from pathlib import Path

from ix.domain.errors import ConfigError
from ix.lab.schema import ExperimentSpec


def refuse_unrunnable_import(spec: ExperimentSpec, file: Path, *,
                             runtime_override: str | None) -> None:
    """`ix run` of an experiment `ix import` made: a `ConfigError` (exit 2) naming it and why,
    when its case files hold placeholders instead of prompts, or a subject has no runtime of
    its own (it would fall to the default, claude-code) and `--runtime` names none."""
    imported = spec.imported
    if imported is None:
        return
    name = spec.name
    if not imported.prompts:
        raise ConfigError(
            f"experiment {name!r} was made by `ix import` from {imported.source} "
            f"({imported.format}), which records no prompts: its case files hold placeholders, "
            "so running it would measure nothing. Its imported runs stay readable (ix report, "
            "ix results); to run it, write each case's prompt in cases/ and set "
            "`imported.prompts: true`", file=file, field="imported")
    if runtime_override is None and spec.runtime is None:
        bare = [s.name for s in spec.subjects if s.runtime is None and s.profile is None]
        if bare:
            raise ConfigError(
                f"experiment {name!r} was made by `ix import` from {imported.source} "
                f"({imported.format}), which records no runtime for subject(s) "
                f"{', '.join(bare)}: running it would send every trial to the default "
                "runtime. Give each a `runtime:` (and its `skills:`), or pass --runtime",
                file=file, field="imported")
