"""Cases from a table (docs/experiments.md, "Cases from a table"): the map language, the
formats (CSV, JSONL, JSON, Parquet, skill-creator's eval sets), row checks naming the file, the
row and the column, and `cases: {from: TABLE, map: ...}` read in place by the loader."""

import json
from pathlib import Path

import pytest

from conftest import case, write
from ix.domain.errors import ConfigError, ConfigErrors
from ix.engine.resume import cases_digest
from ix.fs.case_tables import load_case_table, parse_map
from ix.lab.loader import check_experiment, load_experiment

ISSUE_MAP = "prompt=query,expectation=should_trigger[true=must_trigger,false=should_not_trigger]"
CSV = ("\ufeffquery,should_trigger,name,notes\n"
       '"How do I write evals, with error bars?",TRUE,evals-howto,"two\nlines"\n'
       "Convert this docx to pdf,false,docx-pdf,\n")


def _problems(exc: ConfigError) -> list[str]:
    return [e.render() for e in (exc.errors if isinstance(exc, ConfigErrors) else [exc])]


def test_the_issues_map_makes_cases_from_a_csv_with_a_bom_and_a_quoted_newline(tmp_path):
    table = write(tmp_path / "data.csv", CSV)
    got = load_case_table(table, ISSUE_MAP + ",id=name,metadata.notes=notes")
    assert [c.meta for c in got.cases] == [
        {"id": "evals-howto", "expectation": "must_trigger",
         "metadata": {"notes": "two\nlines"}},
        {"id": "docx-pdf", "expectation": "should_not_trigger"}]
    assert got.cases[0].prompt == "How do I write evals, with error bars?"
    assert got.cases[0].where == "row 2" and got.unmapped == ()


def test_rows_without_ids_are_numbered_by_expectation_and_unmapped_columns_listed(tmp_path):
    got = load_case_table(write(tmp_path / "data.csv", CSV), ISSUE_MAP)
    assert [c.meta["id"] for c in got.cases] == ["must-001", "not-001"]
    assert got.unmapped == ("name", "notes")


def test_skill_creators_trigger_eval_set_reads_with_no_map(tmp_path):
    table = tmp_path / "trigger_eval.json"
    table.write_text(json.dumps([{"query": "my boss sent me 'Q4 sales final v2.xlsx'",
                                  "should_trigger": True},
                                 {"query": "write a fibonacci function", "should_trigger": False}]))
    got = load_case_table(table)
    assert got.format == "skill-creator trigger eval set"
    assert [(c.meta["id"], c.meta["expectation"]) for c in got.cases] == [
        ("must-001", "must_trigger"), ("not-001", "should_not_trigger")]


def test_skill_creators_evals_json_is_must_trigger_with_its_expectations_in_metadata(tmp_path):
    table = tmp_path / "evals.json"
    table.write_text(json.dumps({"skill_name": "pdf", "evals": [
        {"id": 1, "prompt": "Fill in form.pdf", "expected_output": "a filled form",
         "files": ["evals/files/form.pdf"], "expectations": ["every field is filled"]}]}))
    (got,) = load_case_table(table).cases
    assert got.meta == {"id": "must-001", "expectation": "must_trigger", "metadata": {
        "expected_output": "a filled form", "expectations": ["every field is filled"],
        "files": ["evals/files/form.pdf"], "eval_id": 1}}


def test_jsonl_and_parquet_read_as_the_csv_does(tmp_path):
    import duckdb

    rows = [{"query": "How do I write evals?", "should_trigger": True, "tags": ["evals", "x"]},
            {"query": "Convert this docx", "should_trigger": False, "tags": []}]
    jsonl = tmp_path / "data.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    parquet = tmp_path / "data.parquet"
    with duckdb.connect() as db:
        db.execute(f"COPY (SELECT * FROM read_json_auto('{jsonl}')) TO '{parquet}' "
                   "(FORMAT parquet)")
    for table in (jsonl, parquet):
        got = load_case_table(table, ISSUE_MAP)
        assert [c.meta for c in got.cases] == [
            {"id": "must-001", "expectation": "must_trigger", "tags": ["evals", "x"]},
            {"id": "not-001", "expectation": "should_not_trigger"}], table.suffix


def test_every_bad_row_is_named_by_file_row_and_column(tmp_path):
    table = write(tmp_path / "data.csv", "query,should_trigger,name\n"
                  "fine,true,a\n,true,b\nwhat,maybe,c\nagain,false,a\nbad id,true,../x\n")
    with pytest.raises(ConfigErrors) as caught:
        load_case_table(table, ISSUE_MAP + ",id=name")
    assert _problems(caught.value) == [
        f"{table}: row 3, query: the prompt is empty",
        f"{table}: row 4, should_trigger: 'maybe' gives no expectation: the values that do "
        "are true, false",
        f"{table}: row 6, name: invalid case id '../x': must not hold path separators "
        "('/' or '\\')",
        f"{table}: row 5, name: case id 'a' is the id of row 2"]


@pytest.mark.parametrize(("text", "says"), [
    ("prompt=query,expectation=should_trigger[true=must]", "'must' is not one of"),
    ("prompt=query,promt=x", "unknown field 'promt'; did you mean 'prompt'?"),
    ("prompt", "'prompt' is not field=column"),
    ("prompt=query,prompt=q", "mapped twice"),
    ("prompt=query,expectation=should_trigger[true=must_trigger", "unclosed ["),
    ("prompt=query,expectation='always'", "'always' is not one of"),
])
def test_a_bad_map_names_the_option_and_the_bad_part(text, says):
    with pytest.raises(ConfigError) as caught:
        parse_map(text)
    assert caught.value.field == "--map" and says in caught.value.message


def test_a_map_naming_a_missing_column_lists_the_columns(tmp_path):
    table = write(tmp_path / "data.csv", CSV)
    with pytest.raises(ConfigError, match=r"no column 'qury'; did you mean 'query'\? "
                                          r"\(columns: query, should_trigger, name, notes\)"):
        load_case_table(table, "prompt=qury")


def test_a_quoted_constant_gives_every_row_one_expectation(tmp_path):
    table = write(tmp_path / "must.csv", "text\nBuild the pivot table\nChart Q3 revenue\n")
    got = load_case_table(table, "prompt=text,expectation='must_trigger',difficulty='hard'")
    assert {c.meta["expectation"] for c in got.cases} == {"must_trigger"}
    assert {c.meta["difficulty"] for c in got.cases} == {"hard"}


def _experiment(lab: Path, cases: str) -> Path:
    write(lab / "exp" / "experiment.yaml",
          f"name: exp\nskill: build-eval\ntrials: 3\nruntime: {{kind: mock, default_rate: 0.5}}"
          f"\n{cases}")
    return lab / "exp"


def test_cases_from_a_table_are_read_in_place_and_digest_as_case_files_do(tmp_path):
    exp = _experiment(tmp_path / "lab", f'cases: {{from: data.csv, map: "{ISSUE_MAP},id=name"}}\n')
    write(exp / "data.csv", CSV)
    loaded = load_experiment(exp)
    assert [c.id for c in loaded.experiment.cases] == ["evals-howto", "docx-pdf"]
    other = _experiment(tmp_path / "lab2", "")
    case(other, "evals-howto", "must_trigger", "How do I write evals, with error bars?")
    case(other, "docx-pdf", "should_not_trigger", "Convert this docx to pdf")
    files = load_experiment(other).experiment.cases
    assert cases_digest(sorted(files, key=lambda c: c.id)) == cases_digest(
        sorted(loaded.experiment.cases, key=lambda c: c.id))


def test_a_table_besides_the_suite_shares_its_ids(tmp_path):
    exp = _experiment(tmp_path / "lab", f'cases: {{suite: cases/, from: data.csv, '
                                        f'map: "{ISSUE_MAP},id=name"}}\n')
    write(exp / "data.csv", CSV)
    case(exp, "own-001", "must_trigger", "A case file's prompt")
    assert [c.id for c in load_experiment(exp).experiment.cases] == [
        "own-001", "evals-howto", "docx-pdf"]
    case(exp, "docx-pdf", "must_trigger", "Twice")
    _, problems = check_experiment(exp)
    assert any("duplicate case id 'docx-pdf'" in p.render() and "data.csv row 3" in p.render()
               for p in problems), [p.render() for p in problems]


def test_a_bad_table_in_experiment_yaml_is_named_with_its_row_and_column(tmp_path):
    exp = _experiment(tmp_path / "lab", "cases: {from: data.csv, map: 'prompt=nope'}\n")
    write(exp / "data.csv", CSV)
    _, problems = check_experiment(exp)
    assert [p.field for p in problems] == ["cases.map"]
    assert str(exp / "experiment.yaml") == problems[0].file
    write(exp / "experiment.yaml", (exp / "experiment.yaml").read_text().replace(
        "'prompt=nope'", f"'{ISSUE_MAP.replace('true=', 'yes=')}'"))
    _, problems = check_experiment(exp)
    assert problems[0].render().startswith(f"{exp / 'data.csv'}: row 2, should_trigger:")


def test_a_table_outside_the_lab_is_refused(tmp_path):
    write(tmp_path / "data.csv", CSV)
    exp = _experiment(tmp_path / "lab", "cases: {from: ../../data.csv}\n")
    _, problems = check_experiment(exp, tmp_path / "lab")
    assert [p.field for p in problems] == ["cases.from"]
