"""`ix.fs.storage_faults`: which errors are the storage's, and what the one line says; the
writers that leave nothing behind when they fail (tests/store/test_hardening_storage.py runs
the real faults through every command)."""

import errno
import os

import duckdb
import pytest

from ix.domain.errors import IxError, StorageError
from ix.fs.files import write_text_atomic
from ix.fs.storage_faults import HINT, storage_error, storage_faults
from ix.interchange.export import write_folder

# The message of a real failure: `ix results` refreshing its index under RLIMIT_FSIZE.
DUCKDB_FULL = ('IO Error: Async write failed for range [offset=0, size=2372]: '
               '{"exception_type":"IO","exception_message":"Could not write file '
               '\\"/lab/.ix/index/.exp-fd93e4da477f.parquet.f0e15174.tmp\\": File too large",'
               '"errno":"27"}')


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS,
                                  errno.EACCES, errno.EPERM, errno.EIO])
def test_an_os_error_of_the_storage_is_one_line_naming_file_cause_and_remedy(code):
    exc = OSError(code, os.strerror(code), "/lab/tags.yaml")
    fault = storage_error(exc, "the tags were not changed")
    assert isinstance(fault, StorageError) and isinstance(fault, IxError)  # one line, exit 2
    assert fault.render() == (f"/lab/tags.yaml: {os.strerror(code)}; the tags were not "
                              f"changed. {HINT}")


@pytest.mark.parametrize("exc", [OSError(errno.ENOENT, "No such file or directory", "/x"),
                                 OSError(errno.EISDIR, "Is a directory", "/x"),
                                 ValueError("Permission denied"), KeyError("x"),
                                 duckdb.IOException('IO Error: No files found that match the '
                                                    'pattern "/x.parquet"'),
                                 duckdb.ParserException("syntax error at or near \"SELEC\"")])
def test_other_errors_are_not_storage_faults(exc):
    assert storage_error(exc) is None
    with pytest.raises(type(exc)), storage_faults("anything"):
        raise exc


def test_a_temporary_file_is_named_as_the_file_it_was_to_become():
    exc = OSError(errno.EACCES, "Permission denied", "/lab/.tags.yaml.lnhtehw_.tmp")
    assert storage_error(exc).file == "/lab/tags.yaml"
    inside = OSError(errno.ENOSPC, "No space left on device", "/lab/.ix-import-6bb4.tmp/e/x")
    assert storage_error(inside).file == "/lab"


def test_a_duckdb_error_caused_by_the_disk_names_the_file_and_the_cause():
    fault = storage_error(duckdb.IOException(DUCKDB_FULL), "the index was not updated")
    assert fault is not None
    assert fault.render() == ("/lab/.ix/index/exp-fd93e4da477f.parquet: File too large; "
                              f"the index was not updated. {HINT}")
    denied = duckdb.IOException('IO Error: Cannot open file "/out/x.csv": Permission denied')
    assert storage_error(denied).render() == f"/out/x.csv: Permission denied. {HINT}"


def test_storage_faults_turns_a_fault_into_the_storage_error_and_keeps_a_given_file(tmp_path):
    with pytest.raises(StorageError) as caught, \
            storage_faults("nothing was exported", file=tmp_path / "out.csv"):
        raise OSError(errno.EFBIG, "File too large")  # (os.write names no file)
    assert caught.value.render() == f"{tmp_path / 'out.csv'}: File too large; nothing was " \
                                    f"exported. {HINT}"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_failed_atomic_write_leaves_no_temporary_file_and_no_folder_it_made(tmp_path):
    target = tmp_path / "a" / "b" / "report.md"
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(target, "half \udcff")  # fails mid-write, after the folders exist
    assert list(tmp_path.iterdir()) == []
    write_text_atomic(target, "whole")
    assert target.read_text() == "whole"


def test_a_folder_export_that_fails_leaves_nothing_and_one_that_succeeds_is_whole(tmp_path):
    out = tmp_path / "logs"

    def logs():
        yield "a.json", "{}"
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x"))

    with pytest.raises(OSError):
        write_folder(out, logs())
    assert list(tmp_path.iterdir()) == []  # no --out, no temporary folder to block a retry
    assert write_folder(out, iter([("a.json", "{}"), ("b.json", "[]")])) == [
        out / "a.json", out / "b.json"]
    assert sorted(p.name for p in out.iterdir()) == ["a.json", "b.json"]
    assert out.stat().st_mode & 0o777 == 0o777 & ~_umask()
    # --force into the existing folder: the new files replace theirs, others stay
    write_folder(out, iter([("a.json", '{"new": 1}')]))
    assert (out / "a.json").read_text() == '{"new": 1}' and (out / "b.json").exists()


def test_a_file_in_the_temporary_folder_is_named_as_the_file_in_out(tmp_path):
    out = tmp_path / "logs"
    (tmp_path / "blocker").mkdir()

    def logs():
        yield "sub/a.json", "{}"  # its folder does not exist in the temporary folder: ENOENT

    with pytest.raises(OSError) as caught:
        write_folder(out, logs())
    assert str(caught.value.filename).startswith(str(out / "sub"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker"]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_no_usable_temporary_folder_is_a_storage_fault():
    # what `tempfile` raises when it cannot write a file in any candidate folder
    exc = FileNotFoundError(errno.ENOENT, "No usable temporary directory found in ['/tmp']")
    assert storage_error(exc).render() == (
        "No usable temporary directory found in ['/tmp'] (each is full or cannot be "
        f"written). {HINT}")
    assert storage_error(FileNotFoundError(errno.ENOENT, "No such file", "/x")) is None
