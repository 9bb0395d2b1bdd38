"""Cases named one by one (`cases: {files: [{file, expectation}]}`, the RFC's `probes:`):
each a Markdown file inside the experiment, its frontmatter optional, the list's
`expectation` (when given) over the file's own."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.fs.frontmatter import read_frontmatter
from ix.fs.paths import lies_within, readable_file

__all__ = ["listed_cases"]


def listed_cases(experiment: Path, items: Sequence[tuple[str, str | None]], *,
                 file: Path) -> list[tuple[Path, tuple[dict[str, Any], str]]]:
    """Each listed (path, expectation) read: (the case file, (its frontmatter with the
    expectation, its body)). A path outside the experiment, or no file there, is a
    `ConfigError` naming `cases.files[i].file` in `file` (experiment.yaml)."""
    out = []
    for i, (path, expectation) in enumerate(items):
        field = f"cases.files[{i}].file"
        case_file = experiment / path
        if not lies_within(case_file, experiment):
            raise ConfigError(f"{path!r} must be a file inside the experiment", file=file,
                              field=field)
        if not readable_file(case_file):
            raise ConfigError(f"case file {path!r} not found (paths are relative to the "
                              "experiment's folder)", file=file, field=field)
        meta, body = read_frontmatter(case_file)
        if expectation is not None:
            meta = {**meta, "expectation": expectation}
        out.append((case_file, (meta, body)))
    return out
