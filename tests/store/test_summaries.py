"""The one summary reader: `summary_as_written` names the file and what is wrong with it, and
`checked_sha256` vouches only for bytes that are a summary."""

from pathlib import Path

import pytest

from ix.domain.errors import ConfigError
from ix.store.layout import RunDir
from ix.store.summaries import checked_sha256, summary_as_written


@pytest.mark.parametrize(("text", "words"), [
    (None, "has no summary"), ("{not json", "not valid JSON"), ("[1, 2]", "no JSON object")])
def test_a_summary_that_does_not_read_is_refused_naming_the_file(tmp_path: Path, text, words):
    path = tmp_path / "summary.json"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=words) as caught:
        summary_as_written(path)
    assert str(path) in caught.value.render()


def test_a_summary_reads_as_written(tmp_path: Path):
    path = tmp_path / "summary.json"
    path.write_text('{"run_id": "r", "extra": [1]}', encoding="utf-8")
    assert summary_as_written(path) == {"run_id": "r", "extra": [1]}


def test_only_a_valid_summary_gets_a_checksum(tmp_path: Path):
    run = RunDir(tmp_path)
    assert checked_sha256(tmp_path) is None  # none written
    run.summary.write_text('{"run_id": "r"}', encoding="utf-8")  # JSON, not a summary
    assert checked_sha256(tmp_path) is None
