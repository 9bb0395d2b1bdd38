"""A run's trials out of the lab: the original lines (jsonl) and one JSON document (json);
csv and parquet come from the query layer (`ix.api.results`), Inspect logs from
`ix.interchange.inspect_log`.

The trial log is only read here. An export file is written to a temporary file and renamed,
an export folder built under a temporary name, so a failed or interrupted export (a full
disk) never leaves half a file or a folder in the way of a retry; an existing `--out` is
refused unless the caller forces it (`check_out`).
"""

import json
import os
import secrets
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError, Warn
from ix.fs.files import write_text_atomic
from ix.store.trial_lines import standing, trial_line
from ix.store.trials import parse_line, skipped_line


def run_lines(trials: Path, run_id: str, warn: Warn | None = None) -> list[bytes]:
    """Every line of `run_id` in a trial log, byte for byte (each ends with a newline).

    Torn or corrupt lines are skipped with a warning, as `read_trials` does."""
    lines: list[bytes] = []
    marker = run_id.encode()
    if not trials.is_file():
        return lines
    with trials.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            if marker not in raw:
                continue
            record = parse_line(raw)
            if record is None or not raw.endswith(b"\n") or trial_line(record) is None:
                if warn is not None:
                    warn(skipped_line(trials, number, raw, record is not None
                                      and raw.endswith(b"\n")))
                continue
            if record.get("run_id") == run_id:
                lines.append(raw)
    return lines


def latest_attempts(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One record per trial: the attempt that stands (`ix.store.trial_lines.standing`: the
    latest attempt, a later line on a tie), as aggregation counts them; in the order of their
    first line. `records` are one run's."""
    return list(standing(records).values())


def check_out(out: Path, *, force: bool, directory: bool = False,
              fmt: str = "inspect") -> None:
    """Refuse to overwrite an existing `--out` unless forced, and a file where a directory
    is wanted (or the reverse) even then."""
    if not out.exists():
        if not out.parent.is_dir():
            raise ConfigError(f"the folder {out.parent} does not exist", field="--out")
        return
    if directory and not out.is_dir():
        raise ConfigError(f"{out} is a file; --format {fmt} writes a folder", field="--out")
    if not directory and out.is_dir():
        raise ConfigError(f"{out} is a folder; give a file path", field="--out")
    if not force:
        raise ConfigError(f"{out} already exists; pass --force to overwrite it", field="--out")


def write_jsonl(lines: Sequence[bytes], out: Path) -> None:
    write_text_atomic(out, b"".join(lines).decode("utf-8"), shared=True)


def write_json(document: Mapping[str, Any], out: Path) -> None:
    write_text_atomic(out, json_text(document), shared=True)


def json_text(document: Any) -> str:
    """JSON for an export file: indented, UTF-8. A NaN or an infinity, which JSON cannot hold
    (a hand-edited trial line may: `"score": NaN`, `1e400`), is written as null."""
    try:
        return json.dumps(document, ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    except ValueError:  # "Out of range float values are not JSON compliant"
        loose = json.loads(json.dumps(document, ensure_ascii=False),
                           parse_constant=lambda _: None)
        return json.dumps(loose, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def write_folder(out: Path, files: Iterable[tuple[str, str]]) -> list[Path]:
    """Files (name, text) into the folder `out`, all or none: they are written into a
    temporary folder beside it, which then becomes `out` (or, when `out` exists, their
    renames into it follow once every file is written). On failure the temporary folder
    is removed, so a retry finds nothing in its way; an `OSError` names the file in `out`."""
    tmp = out.with_name(f".{out.name}.{secrets.token_hex(4)}.tmp")
    names: list[str] = []
    try:
        tmp.mkdir()
        for name, text in files:
            write_text_atomic(tmp / name, text, parents=False, shared=True)
            names.append(name)
        if out.is_dir():  # --force: into the existing folder, a rename per file
            for name in names:
                os.replace(tmp / name, out / name)
            tmp.rmdir()
        else:
            os.rename(tmp, out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        named = os.fsdecode(exc.filename) if exc.filename is not None else ""
        if exc.errno is None or not named.startswith(str(tmp)):
            raise
        raise type(exc)(exc.errno, exc.strerror, str(out) + named[len(str(tmp)):]) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [out / name for name in names]
