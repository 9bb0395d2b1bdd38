"""People's labels of judged trials (`ix.store.labels`, issue 36): checked as they are made,
appended, read back past a torn line, the latest of each kept, imported from CSV and JSON
Lines with the file, line and key of anything wrong, and nothing kept from a bad file."""

import json

import pytest

from ix.domain.errors import ConfigError
from ix.store.labels import (
    add_labels,
    labels_path,
    latest_labels,
    make_label,
    parse_label_file,
    read_labels,
)

TRIAL = {"run_id": "R1", "subject": "s", "probe_id": "c1", "trial": 0, "sensor": "quality"}


def test_a_label_is_on_a_trial_or_on_a_case_with_a_verdict_or_a_score():
    on_trial = make_label({**TRIAL, "value": "pass"}, labeller="ana")
    assert on_trial["value"] is True and on_trial["dimension"] is None
    assert on_trial["labeller"] == "ana" and on_trial["at"].endswith("Z")
    on_case = make_label({"probe_id": "c1", "sensor": "quality", "dimension": "clarity",
                          "value": "4", "labeller": "bo"})
    assert on_case["value"] == 4.0 and on_case["run_id"] is None and on_case["trial"] is None


@pytest.mark.parametrize(("raw", "words"), [
    ({**TRIAL, "value": "maybe"}, "value: pass or fail"),
    ({**TRIAL, "dimension": "clarity", "value": "nan"}, "value: a number for dimension"),
    ({**TRIAL, "trial": -1, "value": True}, "trial: a whole number >= 0"),
    ({"probe_id": "c1", "sensor": "q", "run_id": "R1", "value": True}, "all three"),
    ({"sensor": "q", "value": True}, "probe_id: missing"),
    ({**TRIAL, "value": True}, "labeller: missing"),
])
def test_a_wrong_label_says_which_key_and_why(raw, words):
    with pytest.raises(ValueError, match=words):
        make_label(raw)


def test_labels_append_and_read_back_past_a_torn_line_the_latest_of_each_kept(tmp_path):
    exp = tmp_path / "e"
    assert read_labels(exp) == []
    first = make_label({**TRIAL, "value": False}, labeller="ana")
    assert add_labels(exp, [first, make_label({**TRIAL, "value": True}, labeller="bo")]) == 2
    with labels_path(exp).open("a") as f:
        f.write('{"probe_id": "c2", "sens')  # a crash mid-write
    warned: list[str] = []
    again = make_label({**TRIAL, "value": True}, labeller="ana")  # ana changes her mind
    add_labels(exp, [again])
    got = read_labels(exp, warned.append)
    assert len(got) == 3 and "line 3: skipped (not a label" in warned[0]
    kept = latest_labels(got)
    assert [(x["labeller"], x["value"]) for x in kept] == [("bo", True), ("ana", True)]


def test_a_table_of_labels_imports_whole_or_not_at_all(tmp_path):
    good = tmp_path / "labels.csv"
    good.write_text("run_id,subject,probe_id,trial,sensor,dimension,value\n"
                    "R1,s,c1,0,quality,,pass\nR1,s,c1,1,quality,clarity,3\n,,c2,,quality,,0\n")
    rows = parse_label_file(good, labeller="ana")
    assert [r["value"] for r in rows] == [True, 3.0, False]
    assert rows[1]["trial"] == 1 and rows[2]["run_id"] is None
    bad = tmp_path / "labels.jsonl"
    bad.write_text(json.dumps({**TRIAL, "value": True, "labeller": "x"}) + "\n"
                   + json.dumps({**TRIAL, "value": "perhaps", "labeller": "x"}) + "\n")
    with pytest.raises(ConfigError) as caught:
        parse_label_file(bad)
    assert caught.value.field == "line 2" and "value: pass or fail" in str(caught.value)
    assert str(caught.value.file) == str(bad)
    header = tmp_path / "h.csv"
    header.write_text("case,verdict\nc1,pass\n")
    with pytest.raises(ConfigError, match="the header lacks probe_id, sensor, value"):
        parse_label_file(header)
    sheet = tmp_path / "labels.xlsx"
    sheet.write_bytes(b"PK")
    with pytest.raises(ConfigError, match=r"ends in \.csv or \.jsonl"):
        parse_label_file(sheet)

