"""`ix compare`: two runs of one experiment, before and after a change."""

import json

from conftest import ix_in_process, mock_experiment, run_ix


def run_id(lab, *args):
    """A run to compare (set-up, in process); its id."""
    r = ix_in_process("run", "--lab", str(lab), "--json", *args)
    assert r.code == 0, r.output
    return json.loads(r.stdout)["run_id"]


def test_a_regression_between_two_runs_is_credible_and_named(lab):
    exp = mock_experiment(lab, rates={f"must-{i:03d}": 0.95 for i in range(1, 13)},
                          n_must=12, n_not=6, trials=6)
    before = run_id(lab)
    yaml = (exp / "experiment.yaml").read_text().replace(": 0.95", ": 0.1")
    (exp / "experiment.yaml").write_text(yaml)
    after = run_id(lab)
    # a prefix of the id names its run: the shortest from 18 characters on that is unique
    # (made in process, both runs may start in one second and share more than the stamp)
    prefix = next(after[:n] for n in range(18, len(after)) if not before.startswith(after[:n]))
    r = run_ix("compare", before, prefix, "--lab", str(lab), "--json")  # the real command
    assert r.code == 0, r.output
    data = json.loads(r.stdout)
    assert data["baseline"] == before
    [c] = data["comparisons"]
    assert c["run"] == after and c["cases"] == 18
    recall = c["metrics"]["recall"]
    assert recall["before"] > 0.9 and recall["after"] < 0.2
    assert recall["diff_ci"][1] < 0 and recall["p_better"] < 0.01 and recall["paired"]
    assert "credibly worse on" in c["verdict"] and "recall" in c["verdict"]
    assert len(c["flips"]) >= 10
    text = ix_in_process("compare", before, after, "--lab", str(lab))
    assert "delta [95% CI]" in text.stdout and "credibly worse" in text.stdout


def test_identical_runs_show_no_credible_change(lab):
    mock_experiment(lab, rates={"must-001": 0.9}, trials=4)
    a = run_id(lab, "--seed", "3")
    b = run_id(lab, "--seed", "3")
    r = ix_in_process("compare", a, b, "--lab", str(lab), "--json")
    [c] = json.loads(r.stdout)["comparisons"]
    assert c["flips"] == [] and "no credible change" in c["verdict"]


def test_compare_needs_two_known_runs(lab):
    mock_experiment(lab, trials=1)
    a = run_id(lab)
    for args, text in (([a], "at least two"), ([a, "nosuchrun"], "nosuchrun")):
        # the real command once for the exit-2 contract, the other refusal in process
        command = run_ix if text == "nosuchrun" else ix_in_process
        r = command("compare", *args, "--lab", str(lab))
        assert r.code == 2 and text in r.stderr and "Traceback" not in r.output


def test_runs_with_no_case_in_common_are_refused(lab):
    one = mock_experiment(lab, "one", n_must=1, n_not=1, n_edge=0, trials=1)
    two = mock_experiment(lab, "two", n_must=0, n_not=0, n_edge=0, trials=1)
    (two / "cases").mkdir(exist_ok=True)
    (two / "cases" / "x-001.md").write_text("---\nexpectation: must_trigger\n---\nx\n")
    a = run_id(lab, "one")
    b = run_id(lab, "two")
    assert one.exists()
    r = ix_in_process("compare", a, b, "--lab", str(lab))
    assert r.code == 2 and "no case in common" in r.stderr
