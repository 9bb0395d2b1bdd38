"""`ix plan`: sample sizes for a target width or difference, checked against references.

The numbers are asked in process (`ix_in_process`); each contract of the command (`--json` exit
0, the text it prints, exit 2 with one line on stderr) is held by one real `ix` (`run_ix`)."""

import json

import pytest
from scipy import stats as sps
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_effectsize

from conftest import case, ix_in_process, mock_experiment, run_ix, write


def plan(*args, lab=None):
    extra = ["--lab", str(lab)] if lab else []
    r = ix_in_process("plan", *args, *extra, "--json")
    assert r.code == 0, r.output
    return json.loads(r.stdout)["answers"]


def test_width_gives_the_smallest_n_whose_interval_is_narrow_enough():
    [a] = plan("--width", "0.2")
    n = a["n"]

    def width(m):
        lo, hi = sps.beta.ppf([0.025, 0.975], round(0.5 * m) + 1, m - round(0.5 * m) + 1)
        return hi - lo

    assert width(n) <= 0.2 < width(n - 1)
    assert any("0.5" in s for s in a["assumptions"])


def test_independent_design_matches_statsmodels_cohen_h():
    [a] = plan("--mde", "0.1", "--p1", "0.7", "--method", "cohen_h")
    h = proportion_effectsize(0.8, 0.7)
    expected = NormalIndPower().solve_power(effect_size=h, alpha=0.05, power=0.8, ratio=1)
    assert a["n_per_subject"] == pytest.approx(expected, abs=1)


def test_paired_design_needs_fewer_cases_than_independent():
    [ind] = plan("--mde", "0.1", "--p1", "0.5")
    [pair] = plan("--mde", "0.1", "--paired", "--trials", "5", "--omega2", "0.01")
    assert pair["n_cases"] < ind["n_per_subject"]
    [more] = plan("--mde", "0.1", "--paired", "--trials", "5", "--omega2", "0.05")
    assert more["n_cases"] > pair["n_cases"]


def test_paired_mde_for_a_given_number_of_cases_inverts_n():
    [a] = plan("--paired", "--cases", "50", "--trials", "3")
    mde = a["mde_for_cases"]["mde"]
    [b] = plan("--paired", "--mde", str(mde), "--trials", "3")
    assert b["n_cases"] in (50, 51)


def test_planning_values_come_from_the_latest_run(lab):
    mock_experiment(lab, rates={"must-001": 0.5, "must-002": 0.2, "not-001": 0.1})
    assert ix_in_process("run", "--lab", str(lab)).code == 0  # set-up: the run plan reads
    r = run_ix("plan", "exp", "--lab", str(lab), "--mde", "0.1", "--paired", "--json")  # real
    assert r.code == 0, r.output
    data = json.loads(r.stdout)
    # an activation experiment: the must cases' rates (DESIGN.md §8), not must and not pooled
    assert data["from_run"]["cases"] == 3 and data["from_run"]["trials"] == 5
    assert data["from_run"]["scope"] == "must"
    assert data["from_run"]["sigma2_a"] > 0
    assert data["answers"][0]["n_cases"] > 0
    text = ix_in_process("plan", "exp", "--lab", str(lab), "--mde", "0.1", "--paired")
    assert "assuming" in text.stdout and "planning values of the must cases from" in text.stdout


def test_before_its_first_run_an_experiment_is_planned_from_its_design(lab):
    mock_experiment(lab, trials=4)
    r = ix_in_process("plan", "exp", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    data = json.loads(r.stdout)
    # the design's must cases (3 of 6): an activation rate is of one kind of case
    assert data["from_design"]["cases"] == 3 and data["from_design"]["trials"] == 4
    assert data["from_design"]["scope"] == "must"
    (answer,) = data["answers"]
    assert answer["mde_for_cases"]["cases"] == 3 and 0 < answer["mde_for_cases"]["mde"] < 1
    text = ix_in_process("plan", "exp", "--lab", str(lab))
    assert "planning values of the must cases from the design of exp" in text.stdout
    assert not (lab / "exp" / "results").exists()


@pytest.mark.parametrize("args,field", [
    ([], "ix plan"),
    (["--width", "1.5"], "--width"),
    (["--mde", "0.1", "--p1", "1.2"], "--p"),
    (["--mde", "0.1", "--method", "magic"], "--method"),
    (["--mde", "0.1", "--alpha", "2"], "--alpha"),
    (["--paired"], "--paired"),
    (["--paired", "--mde", "0.1", "--omega2", "-1"], "--omega2"),
])
def test_bad_plan_input_is_exit_2_naming_the_flag(args, field):
    r = ix_in_process("plan", *args)
    assert r.code == 2, r.output
    assert field in r.stderr and "Traceback" not in r.output


IMPOSSIBLE = [
    (["--mde", "0.3", "--p1", "0.7"], ["--mde", "--p1"]),       # p1 + mde = 1
    (["--mde", "0.5", "--p1", "0.7"], ["--mde", "--p1"]),       # p1 + mde > 1
    (["--mde", "0.1", "--p1", "0"], ["--p1"]),
    (["--mde", "0", "--p1", "0.5"], ["--mde"]),
    (["--mde", "nan"], ["--mde"]),
    (["--width", "nan"], ["--width"]),
    (["--width", "0.2", "--p", "nan"], ["--p"]),
    (["--paired", "--mde", "0.1", "--p", "1"], ["--p", "--sigma2-a", "--omega2"]),
    (["--paired", "--mde", "0.1", "--sigma2-a", "0.5"], ["--sigma2-a"]),
    (["--paired", "--mde", "0.1", "--omega2", "inf"], ["--omega2"]),
    (["--paired", "--mde", "1.5"], ["--mde"]),
    (["--paired", "--mde", "0.1", "--trials", "0"], ["--trials"]),
    (["--paired", "--cases", "1"], ["--cases"]),
    (["--width", "0.2", "--cases", "30"], ["--cases", "--paired"]),
    (["--mde", "0.1", "--omega2", "0.01"], ["--omega2", "--paired"]),
    (["--effect", "0.2"], ["--effect"]),
    (["--mde", "0.1", "--power", "1"], ["--power"]),
]


@pytest.mark.parametrize("args,fields", IMPOSSIBLE)
def test_impossible_plan_flags_are_one_line_exit_2_naming_them(args, fields):
    # the first through a real process: nothing else (a warning) reaches its stderr
    ix = run_ix if args == IMPOSSIBLE[0][0] else ix_in_process
    r = ix("plan", *args)
    assert r.code == 2, r.output
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ix: error:"), r.stderr
    for field in fields:
        assert field in lines[0], (field, lines[0])


def goal_experiment(lab, *, n_must: int, n_not: int, trials: int):
    """Two mock subjects and a recall goal (decrease beyond 0.1); no run yet."""
    d = lab / "exp"
    write(d / "experiment.yaml", f"""
        name: exp
        trials: {trials}
        sensor: {{kind: activation, skill: a}}
        subjects:
          - {{name: control, runtime: {{kind: mock}}}}
          - {{name: variant, runtime: {{kind: mock}}}}
        goal:
          hypothesis: the variant lowers recall
          metric: recall
          direction: decrease
          min_effect: 0.1
        """)
    for i in range(n_must):
        case(d, f"must-{i:03d}", "must_trigger")
    for i in range(n_not):
        case(d, f"not-{i:03d}", "should_not_trigger")


def test_an_experiment_with_a_goal_is_planned_for_the_goal_by_simulating_ix_rule(lab):
    goal_experiment(lab, n_must=8, n_not=4, trials=3)
    r = ix_in_process("plan", "exp", "--lab", str(lab), "--effect", "-0.3", "--json")
    assert r.code == 0, r.output
    (a,) = json.loads(r.stdout)["answers"]       # --effect: the goal's answer alone
    assert a["question"] == "goal" and a["metric"] == "recall" and a["effect"] == -0.3
    assert a["unit"] == "must_trigger cases" and a["trials_per_case"] == 3
    assert a["cases"] > 8 and a["simulations"] >= 400
    # sized for 0.8, checked by simulation: the printed probability is the simulated one
    assert 0.75 <= a["p_settle"] <= 1 and a["p_settle"] == a["p_supported"] + a["p_refuted"]
    assert a["t_start"] is not None and abs(a["t_start"] - a["cases"]) <= a["cases"] / 2
    text = ix_in_process("plan", "exp", "--lab", str(lab), "--effect", "-0.3")
    assert text.code == 0, text.output
    assert f"{a['cases']} must_trigger cases" in text.stdout
    assert f"with probability {a['p_settle']:.2f}" in text.stdout
    assert "simulated runs judged by ix's own rule" in text.stdout


def test_a_goal_plan_with_an_effect_on_its_boundary_or_without_a_goal_is_exit_2(lab):
    goal_experiment(lab, n_must=4, n_not=2, trials=3)
    r = run_ix("plan", "exp", "--lab", str(lab), "--effect", "-0.1")  # real: exit 2
    assert r.code == 2 and "--effect" in r.stderr and "boundary" in r.stderr, r.output
    r = ix_in_process("plan", "exp", "--lab", str(lab), "--effect", "1.5")
    assert r.code == 2 and "--effect" in r.stderr and "Traceback" not in r.output
    mock_experiment(lab, name="nogoal")
    r = ix_in_process("plan", "nogoal", "--lab", str(lab), "--effect", "0.2")
    assert r.code == 2 and "--effect" in r.stderr and "no goal" in r.stderr, r.output


def test_an_experiment_with_a_goal_is_planned_for_its_metric_first_and_rates_say_their_scope(
        lab):
    """`ix plan EXP` leads with the goal's metric; the paired answer after it is of the
    activation rate (must), the must cases' rates, and says so."""
    goal_experiment(lab, n_must=6, n_not=4, trials=3)
    d = lab / "exp" / "experiment.yaml"
    d.write_text(d.read_text().replace("{kind: mock}}", "{kind: mock, default_rate: 0.5}}"))
    assert ix_in_process("run", "--lab", str(lab)).code in (0, 1)  # set-up: the run plan reads
    r = ix_in_process("plan", "exp", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    data = json.loads(r.stdout)
    assert [a["question"] for a in data["answers"]] == ["goal", "paired"]
    assert data["answers"][0]["metric"] == "recall"
    assert data["answers"][1]["metric"] == "mean per-case activation rate (must)"
    assert data["from_run"]["scope"] == "must" and data["from_run"]["cases"] == 6
    # the real command's text, wrapped at the COLUMNS it starts with
    text = run_ix("plan", "exp", "--lab", str(lab), env={"COLUMNS": "80"})
    assert text.code == 0, text.output
    flat = " ".join(text.stdout.split())
    assert "settle the goal (recall decrease beyond 0.1" in flat.split(" assuming ")[0]
    assert "activation rate (must)" in flat and "planning values of the must cases" in flat
    assert "must and not" not in flat
