"""Export and import of runs (docs/export.md): the file formats and the API behind them.

Inspect logs are read back with inspect-ai itself (a test-only dependency): the full log and
the header only, with the numbers of ix's own summary. Runs are made by the real `ix run`;
export and import are called through `ix.api.transfer`.
"""

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from inspect_ai.log import read_eval_log
from inspect_ai.scorer import SampleScore, Score, accuracy, stderr

from conftest import ix_in_process, run_ix, tree_digest, write
from ix.api import transfer
from ix.domain.errors import ConfigError

CASES = {"must-001": "must_trigger", "must-002": "must_trigger",
         "not-001": "should_not_trigger", "not-002": "should_not_trigger"}
TRIALS = 4


def two_subject_experiment(lab: Path, folder: str = "tr") -> Path:
    """Two mock subjects over four cases; the control errors on some must-002 trials."""
    d = lab / folder
    write(d / "experiment.yaml", """
        name: transfer
        trials: 4
        sensor: {kind: activation, skill: target}
        runtime: {kind: mock, skill: target}
        subjects:
          - name: control
            runtime: {kind: mock, activation_rates: {must-001: 1.0, must-002: 0.5,
                      not-001: 0.3}, error_rates: {must-002: 0.4}}
          - name: variant
            runtime: {kind: mock, activation_rates: {must-001: 0.7,
                      not-002: 1.0}}
    """)
    for case_id, expectation in CASES.items():
        write(d / "cases" / f"{case_id}.md",
              f"---\nexpectation: {expectation}\ntags: [t1]\n---\nPrompt of {case_id}\n")
    return d


def ix_ok(*args: str) -> str:
    """A run to export (set-up, in process); its stdout."""
    r = ix_in_process(*args)
    assert r.code == 0, r.output
    return r.stdout


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A lab with a run (errored trials retried once: two attempts of some trials) and a
    second, cancelled run; read-only for the tests that use it."""
    lab = tmp_path_factory.mktemp("made") / "lab"
    d = two_subject_experiment(lab)
    # the ids as the commands give them: made in process, two runs may start in one second,
    # and ids of one second do not sort by time
    first = json.loads(ix_ok("run", "--lab", str(lab), "--json"))["run_id"]
    ix_ok("run", "--lab", str(lab), "--retry-failed", "--json")
    r = ix_in_process("run", "--lab", str(lab), "--max-trials", "5", "--json")
    assert r.code == 130, r.output
    cancelled = json.loads(r.stdout)["run_id"]
    assert sorted(p.name for p in (d / "results" / "runs").iterdir()) == sorted([first,
                                                                                 cancelled])
    summary = json.loads((d / "results" / "runs" / first / "summary.json").read_text())
    return {"lab": lab, "dir": d, "run": first, "cancelled": cancelled, "summary": summary}


def lines_of(trials: Path, run_id: str) -> list[dict[str, Any]]:
    return [r for r in map(json.loads, trials.read_bytes().splitlines())
            if r["run_id"] == run_id]


def latest(records: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, Any]]:
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    for r in records:
        key = (r["subject"], r["probe_id"], r["trial"])
        if key not in out or r["attempt"] >= out[key]["attempt"]:
            out[key] = r
    return out


def case_rate(probe: dict[str, Any]) -> float:
    """The fraction of a case's valid trials whose outcome matched its expectation."""
    rate = probe["passed"] / probe["n"]
    return rate if probe["expectation"] == "must_trigger" else 1 - rate


def counts(summary: dict[str, Any]) -> dict[tuple[str, str], tuple[int, int, int]]:
    return {(b["name"], p["probe_id"]): (p["n"], p["passed"], p["errors"])
            for b in summary["subjects"] for p in b["probe_results"]}


def export(made: dict[str, Any], fmt: str, out: Path, run: str | None = None) -> Any:
    return transfer.export_run(made["lab"], run or made["run"], fmt, out)


# ------------------------------------------------------------------------- inspect


def test_inspect_export_is_one_log_per_subject_that_inspect_reads_with_ix_numbers(
        made: dict[str, Any], tmp_path: Path) -> None:
    result = export(made, "inspect", tmp_path / "logs")
    assert len(result.files) == 2
    trials = latest(lines_of(made["dir"] / "results" / "trials.jsonl", made["run"]))
    assert any(r["attempt"] == 1 for r in trials.values())  # the retry is what counts
    blocks = {b["name"]: b for b in made["summary"]["subjects"]}
    run_ids = set()
    for path in result.files:
        log = read_eval_log(str(path))
        subject = log.eval.metadata["ix"]["subject"]
        block = blocks[subject]
        assert log.status == "success"
        assert log.eval.task == "transfer"
        assert log.eval.model == "mock"  # the runtime kind: mock subjects have no model
        assert log.eval.config.epochs == TRIALS
        assert log.eval.dataset.samples == len(CASES)
        assert len(log.samples) == len(CASES) * TRIALS
        run_ids.add(log.eval.run_id)
        for s in log.samples:
            line = trials[(subject, s.id, s.epoch - 1)]
            assert s.target == CASES[s.id]
            assert s.input == f"Prompt of {s.id}"
            if line["error"]:
                assert s.error is not None and not s.scores
                continue
            passed = line["reading"]["passed"]
            right = passed if CASES[s.id] == "must_trigger" else not passed
            assert s.scores["correct"].value == (1.0 if right else 0.0)
        reduced = {r.sample_id: r.value for r in log.reductions[0].samples}
        probes = [p for p in block["probe_results"] if p["n"]]
        assert reduced == pytest.approx({p["probe_id"]: case_rate(p) for p in probes})
        metrics = log.results.scores[0].metrics
        mean_rate = sum(case_rate(p) for p in probes) / len(probes)
        assert metrics["accuracy"].value == pytest.approx(mean_rate)
        # Inspect's own metric functions agree with what the log says
        scores = [SampleScore(score=Score(value=v), sample_id=k) for k, v in reduced.items()]
        assert metrics["accuracy"].value == pytest.approx(accuracy()(scores))
        assert metrics["stderr"].value == pytest.approx(stderr()(scores))
        assert log.results.total_samples == len(CASES) * TRIALS
        assert log.results.completed_samples == sum(
            1 for (name, _, _), r in trials.items() if name == subject and not r["error"])
        errored = sum(1 for s in log.samples if s.error is not None)
        assert errored == block["errors"]
        header = read_eval_log(str(path), header_only=True)
        assert header.samples is None
        assert header.eval.eval_id == log.eval.eval_id
        assert header.results.scores[0].metrics["accuracy"].value == metrics["accuracy"].value
        assert header.eval.config.epochs == TRIALS
    assert len(run_ids) == 1  # one ix run: one Inspect run id, an eval id per subject


def test_without_errors_inspect_accuracy_is_the_summarys_trial_level_pass_rate(
        tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    d = two_subject_experiment(lab)
    text = (d / "experiment.yaml").read_text().replace(", error_rates: {must-002: 0.4}", "")
    (d / "experiment.yaml").write_text(text)
    summary = json.loads(ix_ok("run", "--lab", str(lab), "--json"))
    assert summary["errors"] == 0
    result = transfer.export_run(lab, summary["run_id"], "inspect", tmp_path / "logs")
    for path in result.files:
        header = read_eval_log(str(path), header_only=True)
        block = next(b for b in summary["subjects"]
                     if b["name"] == header.eval.metadata["ix"]["subject"])
        accuracy_value = header.results.scores[0].metrics["accuracy"].value
        assert accuracy_value == pytest.approx(block["trial_level"]["correct"]["rate"],
                                               abs=1e-6)


def test_the_inspect_model_is_the_runtime_kind_and_the_subjects_model() -> None:
    from ix.interchange.inspect_log import model_name

    assert model_name({"runtime": {"kind": "anthropic", "model": "claude-x"}}) == \
        "anthropic/claude-x"
    assert model_name({"runtime": {"kind": "imported", "model": "openai/gpt-x"}}) == \
        "openai/gpt-x"
    assert model_name({"runtime": {"kind": "mock"}}) == "mock"


def test_exporting_a_run_twice_gives_identical_logs(made: dict[str, Any],
                                                    tmp_path: Path) -> None:
    a = export(made, "inspect", tmp_path / "a")
    b = export(made, "inspect", tmp_path / "b")
    assert [p.name for p in a.files] == [p.name for p in b.files]
    for pa, pb in zip(a.files, b.files, strict=True):
        assert pa.read_bytes() == pb.read_bytes()
    ids = {read_eval_log(str(p), header_only=True).eval.eval_id for p in a.files}
    assert len(ids) == 2


def test_a_cancelled_run_exports_as_a_cancelled_inspect_log(made: dict[str, Any],
                                                            tmp_path: Path) -> None:
    result = export(made, "inspect", tmp_path / "logs", run=made["cancelled"])
    statuses = {read_eval_log(str(p), header_only=True).status for p in result.files}
    assert statuses == {"cancelled"}
    total = sum(len(read_eval_log(str(p)).samples or []) for p in result.files)
    assert total == 5


# ------------------------------------------------------------------ jsonl, json, tables


def test_jsonl_export_is_the_runs_lines_byte_for_byte(made: dict[str, Any],
                                                      tmp_path: Path) -> None:
    raw = (made["dir"] / "results" / "trials.jsonl").read_bytes().splitlines(keepends=True)
    for run in (made["run"], made["cancelled"]):
        out = tmp_path / f"{run}.jsonl"
        result = export(made, "jsonl", out, run=run)
        mine = [line for line in raw if json.loads(line)["run_id"] == run]
        assert out.read_bytes() == b"".join(mine)
        assert result.trials == len(mine)


def test_json_export_holds_the_spec_the_summary_and_every_line(made: dict[str, Any],
                                                               tmp_path: Path) -> None:
    export(made, "json", tmp_path / "run.json")
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["run_id"] == made["run"] and doc["experiment"] == "transfer"
    assert doc["spec"]["status"] == "completed"
    assert doc["summary"] == made["summary"]
    assert doc["trials"] == lines_of(made["dir"] / "results" / "trials.jsonl", made["run"])


def test_parquet_and_csv_exports_have_typed_flat_columns(made: dict[str, Any],
                                                         tmp_path: Path) -> None:
    export(made, "parquet", tmp_path / "t.parquet")
    export(made, "csv", tmp_path / "t.csv")
    lines = lines_of(made["dir"] / "results" / "trials.jsonl", made["run"])
    con = duckdb.connect()
    described = con.execute(f"DESCRIBE SELECT * FROM '{tmp_path / 't.parquet'}'").fetchall()
    types = {row[0]: row[1] for row in described}
    assert types["passed"] == "BOOLEAN"
    assert types["trial"] == "INTEGER"
    assert types["seed"] == "BIGINT"
    assert types["started_at"].startswith("TIMESTAMP")
    for source in (f"'{tmp_path / 't.parquet'}'", f"read_csv('{tmp_path / 't.csv'}')"):
        rows = con.execute(f"SELECT subject, probe_id, trial, attempt, passed FROM {source}"
                           ).fetchall()
        assert sorted(rows) == sorted((r["subject"], r["probe_id"], r["trial"], r["attempt"],
                                       None if r["error"] else r["reading"]["passed"])
                                      for r in lines)


# ------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("fmt", ["inspect", "jsonl", "csv"])
def test_round_trip_into_a_fresh_lab_keeps_every_cases_counts(made: dict[str, Any],
                                                              tmp_path: Path, fmt: str) -> None:
    out = tmp_path / ("logs" if fmt == "inspect" else f"run.{fmt}")
    export(made, fmt, out)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    result = transfer.import_results(fresh, out, fmt, experiment="again")
    assert result.created_experiment
    spec_text = (result.run_dir / "spec.yaml").read_text()
    assert "status: completed" in spec_text and f"imported_from: {out}" in spec_text
    imported = json.loads((result.run_dir / "summary.json").read_text())
    assert counts(imported) == counts(made["summary"])
    assert [b["name"] for b in imported["subjects"]] == ["control", "variant"]
    # the new experiment loads, with the imported prompts where the file had them
    prompt = (fresh / "again" / "cases" / "must-001.md").read_text()
    assert ("Prompt of must-001" in prompt) == (fmt == "inspect")
    r = run_ix("validate", "--lab", str(fresh))
    assert r.code == 0, r.output


def test_import_into_an_existing_experiment_appends_a_run_and_leaves_cases_alone(
        made: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    export(made, "jsonl", out)
    lab = tmp_path / "lab"
    d = two_subject_experiment(lab)
    ix_ok("run", "--lab", str(lab))
    cases_before = tree_digest(d / "cases")
    trials_before = (d / "results" / "trials.jsonl").read_bytes()
    result = transfer.import_results(lab, out, "jsonl")
    assert not result.created_experiment and result.experiment == "transfer"
    assert tree_digest(d / "cases") == cases_before
    after = (d / "results" / "trials.jsonl").read_bytes()
    assert after.startswith(trials_before)
    added = [json.loads(line) for line in after[len(trials_before):].splitlines()]
    original = lines_of(made["dir"] / "results" / "trials.jsonl", made["run"])
    assert len(added) == len(original)
    assert {r["run_id"] for r in added} == {result.run_id}
    for new, old in zip(added, original, strict=True):
        assert {**new, "run_id": old["run_id"]} == old  # only the run id changes
    latest_summary = json.loads((d / "results" / "summary-latest.json").read_text())
    assert latest_summary["run_id"] == result.run_id
    audit = [json.loads(x) for x in (lab / "audit.jsonl").read_text().splitlines()]
    assert audit[-1]["action"] == "import"
    assert audit[-1]["details"]["run_id"] == result.run_id


def test_a_log_written_by_inspect_itself_imports_with_its_scores(tmp_path: Path) -> None:
    from inspect_ai import Epochs, Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import scorer
    from inspect_ai.solver import solver

    @solver
    def canned():  # type: ignore[no-untyped-def]
        async def solve(state, generate):  # type: ignore[no-untyped-def]
            state.output = ModelOutput.from_content("mockllm/model", f"answer {state.epoch}")
            return state
        return solve

    @scorer(metrics=[accuracy()])
    def right_on_odd_epochs():  # type: ignore[no-untyped-def]
        async def score(state, target):  # type: ignore[no-untyped-def]
            ok = state.sample_id == "q1" or state.epoch % 2 == 1
            return Score(value="C" if ok else "I")
        return score

    task = Task(name="quiz", dataset=[Sample(id="q1", input="one?", target="1"),
                                      Sample(id="q2", input="two?", target="2")],
                solver=canned(), scorer=right_on_odd_epochs(), epochs=Epochs(3, "mean"))
    [log] = eval(task, model="mockllm/model", log_format="json",
                 log_dir=str(tmp_path / "logs"), display="none")
    lab = tmp_path / "lab"
    lab.mkdir()
    result = transfer.import_results(lab, Path(log.location), "inspect")
    assert result.experiment == "quiz" and result.subjects == ("mockllm:model",)
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert counts(summary) == {("mockllm:model", "q1"): (3, 3, 0),
                               ("mockllm:model", "q2"): (3, 2, 0)}
    prompt = (lab / "quiz" / "cases" / "q2.md").read_text()
    assert "two?" in prompt and "must_trigger" in prompt


# ------------------------------------------------------------------------- bad input


BAD_FILES = {
    "jsonl-corrupt-line": ("jsonl", "x.jsonl", "{not json\n", "line 1"),
    "jsonl-no-reading": ("jsonl", "x.jsonl",
                         '{"subject": "s", "probe_id": "c", "trial": 0, '
                         '"expectation": "must_trigger", "error": null}\n', "line 1.reading"),
    "jsonl-bad-expectation": ("jsonl", "x.jsonl",
                              '{"subject": "s", "probe_id": "c", "trial": 0, '
                              '"expectation": "maybe", "reading": {"passed": true}, '
                              '"error": null}\n', "line 1.expectation"),
    "jsonl-path-in-case-id": ("jsonl", "x.jsonl",
                              '{"subject": "s", "probe_id": "../c", "trial": 0, '
                              '"expectation": "must_trigger", "reading": {"passed": true}, '
                              '"error": null}\n', "line 1.probe_id"),
    "csv-missing-column": ("csv", "x.csv", "subject,probe_id,trial\ns,c,0\n", "header"),
    "csv-bad-trial": ("csv", "x.csv", "subject,probe_id,trial,passed\ns,c,two,true\n",
                      "row 2.trial"),
    "csv-bad-passed": ("csv", "x.csv", "subject,probe_id,trial,passed\ns,c,0,maybe\n",
                       "row 2.passed"),
    "inspect-not-json": ("inspect", "x.json", "{", "x.json"),
    "inspect-no-eval": ("inspect", "x.json", '{"version": 2}', "x.json"),
    "inspect-no-samples": ("inspect", "x.json",
                           '{"version": 2, "status": "success", "eval": {"task": "t", '
                           '"model": "m"}}', "samples"),
    "inspect-bad-epoch": ("inspect", "x.json",
                          '{"version": 2, "status": "success", "eval": {"task": "t", '
                          '"model": "m"}, "samples": [{"id": 1, "epoch": 0}]}',
                          "samples[0].epoch"),
    "inspect-bad-score": ("inspect", "x.json",
                          '{"version": 2, "status": "success", "eval": {"task": "t", '
                          '"model": "m"}, "samples": [{"id": 1, "epoch": 1, "scores": '
                          '{"s": {"value": "great"}}}]}', "scores.s.value"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_malformed_import_file_is_refused_naming_the_field(name: str, tmp_path: Path,
                                                             ) -> None:
    fmt, file_name, text, field = BAD_FILES[name]
    lab = tmp_path / "lab"
    two_subject_experiment(lab)
    path = tmp_path / file_name
    path.write_text(text)
    before = tree_digest(lab)
    with pytest.raises(ConfigError) as caught:
        transfer.import_results(lab, path, fmt, experiment="transfer")
    message = caught.value.render()
    assert str(path) in message and field in message, message
    assert tree_digest(lab) == before
