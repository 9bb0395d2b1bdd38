"""What the command line writes itself, and how a storage fault reads: thin re-exports of
`ix.fs` plus `write_report`, so the CLI reaches the disk only through the API."""

from pathlib import Path

from ix.domain.errors import ConfigError
from ix.fs.files import indented, write_text_atomic
from ix.fs.storage_faults import storage_error, storage_faults


def write_report(path: Path, text: str, *, field: str = "--out") -> None:
    """`text` to `path` whole or not at all, readable by others (a report is for sharing). A
    storage fault is a `StorageError`; any other refusal of the OS a `ConfigError` on `field`."""
    try:
        write_text_atomic(path, text, shared=True)
    except OSError as exc:
        raise storage_error(exc, "the report was not written", file=path) or ConfigError(
            f"cannot write the report: {exc.strerror or exc}", file=path,
            field=field) from None


__all__ = ["indented", "storage_error", "storage_faults", "write_report"]
