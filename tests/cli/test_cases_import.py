"""`ix cases import FILE --experiment E --map ...`: a table becomes case files that `ix validate`
and `ix run` accept; a bad row exits 2 naming the file, the row and the column, and writes
nothing; an existing case file is overwritten only with --force."""

import json
from pathlib import Path

import pytest

from conftest import flat, ix_in_process, run_ix, write

MAP = ("prompt=query,expectation=should_trigger[true=must_trigger,false=should_not_trigger],"
       "id=name")
CSV = ("query,should_trigger,name,owner\n"
       "How do I write evals for my coding agent?,true,evals-howto,ana\n"
       "Add error bars to this eval's results,TRUE,error-bars,bo\n"
       "Convert the board minutes docx to pdf,false,docx-pdf,cy\n")


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    lab = tmp_path / "lab"
    write(lab / "exp" / "experiment.yaml", """
        name: exp
        skill: build-eval
        trials: 3
        runtime: {kind: mock, default_rate: 0.5}
        """)
    write(tmp_path / "data.csv", CSV)
    return lab


def _cases(lab: Path) -> list[str]:
    folder = lab / "exp" / "cases"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_csv_becomes_case_files_that_validate_and_run(lab, tmp_path):
    r = ix_in_process("cases", "import", str(tmp_path / "data.csv"), "--experiment", "exp",
                      "--map", MAP, "--lab", str(lab))
    assert r.code == 0, r.output
    assert f"wrote 3 case(s) to {lab / 'exp' / 'cases'}/ from data.csv (csv)" in r.stdout
    assert "columns left out: owner" in r.stdout
    assert _cases(lab) == ["docx-pdf.md", "error-bars.md", "evals-howto.md"]
    assert (lab / "exp" / "cases" / "docx-pdf.md").read_text() == (
        "---\nid: docx-pdf\nexpectation: should_not_trigger\n---\n"
        "Convert the board minutes docx to pdf\n")
    assert ix_in_process("validate", "--lab", str(lab)).code == 0
    run = ix_in_process("run", "exp", "--lab", str(lab), "--progress", "none", "--json")
    assert run.code == 0, run.output
    assert {p["probe_id"] for p in json.loads(run.stdout)["probe_results"]} == {
        "evals-howto", "error-bars", "docx-pdf"}


def test_a_skill_creator_eval_set_becomes_cases_with_no_map(lab, tmp_path):
    evals = tmp_path / "trigger-eval.json"
    evals.write_text(json.dumps([
        {"query": "ok so my boss sent me 'Q4 sales final v2.xlsx', add a margin column",
         "should_trigger": True},
        {"query": "summarise this pdf for me", "should_trigger": False}]))
    r = ix_in_process("cases", "import", str(evals), "-e", "exp", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    done = json.loads(r.stdout)
    assert done["format"] == "skill-creator trigger eval set" and done["cases"] == 2
    assert _cases(lab) == ["must-001.md", "not-001.md"]
    assert ix_in_process("validate", "--lab", str(lab)).code == 0


def test_bad_rows_exit_2_naming_file_row_and_column_and_write_nothing(lab, tmp_path):
    bad = write(tmp_path / "bad.csv", CSV + ",true,empty\nMaybe?,perhaps,maybe\n")
    r = ix_in_process("cases", "import", str(bad), "-e", "exp", "--map", MAP,
                      "--lab", str(lab))
    assert r.code == 2
    assert f"{bad}: row 5, query: the prompt is empty" in flat(r.stderr)
    assert f"{bad}: row 6, should_trigger: 'perhaps' gives no expectation" in flat(r.stderr)
    assert _cases(lab) == []


def test_no_overwrite_without_force_and_dry_run_writes_nothing(lab, tmp_path):
    args = ("cases", "import", str(tmp_path / "data.csv"), "-e", "exp", "--map", MAP,
            "--lab", str(lab))
    dry = ix_in_process(*args, "--dry-run")
    assert dry.code == 0 and "would write 3 case(s)" in dry.stdout and _cases(lab) == []
    assert ix_in_process(*args).code == 0
    (lab / "exp" / "cases" / "docx-pdf.md").write_text("---\nexpectation: must_trigger\n---\n"
                                                       "mine\n")
    again = ix_in_process(*args)
    assert again.code == 2 and "pass --force to overwrite them" in flat(again.stderr)
    assert (lab / "exp" / "cases" / "docx-pdf.md").read_text().endswith("mine\n")
    forced = ix_in_process(*args, "--force", "--json")
    assert forced.code == 0 and len(json.loads(forced.stdout)["overwritten"]) == 3
    assert (lab / "exp" / "cases" / "docx-pdf.md").read_text().endswith("to pdf\n")


def test_an_id_another_case_file_holds_is_refused_even_with_force(lab, tmp_path):
    write(lab / "exp" / "cases" / "old.md", "---\nid: docx-pdf\nexpectation: must_trigger\n"
                                             "---\nmine\n")
    r = ix_in_process("cases", "import", str(tmp_path / "data.csv"), "-e", "exp", "--map", MAP,
                      "--lab", str(lab), "--force")
    assert r.code == 2 and "case id 'docx-pdf' is the id of" in flat(r.stderr)
    assert _cases(lab) == ["old.md"]


def test_the_real_command_keeps_the_contract(lab, tmp_path):
    bad = write(tmp_path / "bad.csv", "query,should_trigger\nfine,true\nhm,perhaps\n")
    r = run_ix("cases", "import", str(bad), "--experiment", "exp", "--lab", str(lab))
    assert r.code == 2 and "Traceback" not in r.stderr
    assert f"{bad}: row 3, should_trigger:" in flat(r.stderr)
    ok = run_ix("cases", "import", str(tmp_path / "data.csv"), "--experiment", "exp",
                "--map", MAP, "--lab", str(lab), "--json")
    assert ok.code == 0, ok.output
    assert json.loads(ok.stdout)["cases"] == 3
