"""`ix plan` and `ix run` on a goal: the plan sizes the goal's `compare` pair and names it whole
(a context experiment's `[ctx=…]` kept), and a goal whose direction the control cannot show
says so in the run's verdict and in the plan. What they decide and say is asked in process
(`ix_in_process`, the same `main`); the real command prints each text plan, as in process."""

import json

from conftest import Result, comparison_experiment, ix_in_process, run_ix, write

FLOOR = "control recall 0.000: a decrease cannot be observed; only refuted is reachable"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _real_at_80(*args: str) -> Result:
    """The real command at 80 columns, which prints what `main` prints in process."""
    r = run_ix(*args, env={"COLUMNS": "80"})
    assert ix_in_process(*args, env={"COLUMNS": "80"}) == r
    return r


def test_plan_sizes_the_goal_s_compare_pair_and_names_it_whole(lab):
    exp = lab / "ctx"
    rates = ", ".join(f"must-{i:03d}: 0.9" for i in range(8))
    write(exp / "experiment.yaml", f"""
        name: ctx
        trials: 3
        sensor: {{kind: activation, skill: csv}}
        subjects:
          - name: a
            runtime: {{kind: mock, activation_rates: {{{rates}}}, context_decay: {{half_life: 8}}}}
        context:
          prefix: builtin:coding-session
          lengths: [0, 4, 32]
        goal:
          hypothesis: A long session makes csv fire less often.
          metric: activation_rate
          compare: ["a[ctx=0]", "a[ctx=32]"]
          direction: decrease
          min_effect: 0.1
        """)
    for i in range(8):
        write(exp / "cases" / f"must-{i:03d}.md",
              f"---\nexpectation: must_trigger\n---\nProfile data{i}.csv please.\n")
        write(exp / "cases" / f"not-{i:03d}.md",
              f"---\nexpectation: should_not_trigger\n---\nA haiku about rain, {i}.\n")
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code in (0, 1), r.output
    j = ix_in_process("plan", "ctx", "--lab", str(lab), "--json")
    assert j.code == 0, j.output
    plan = json.loads(j.stdout)
    goal = next(a for a in plan["answers"] if a["question"] == "goal")
    assert goal["compare"] == ["a[ctx=0]", "a[ctx=32]"]
    assert "(a[ctx=0] vs a[ctx=32])" in goal["criterion"]
    # the paired answer's variances come from the same pair, not the first two subjects
    assert any("a[ctx=0] and a[ctx=32]" in n for n in plan["from_run"]["notes"])
    text = _real_at_80("plan", "ctx", "--lab", str(lab))
    assert text.code == 0, text.output
    flat = _flat(text.stdout)
    assert "activation_rate decrease beyond 0.1, a[ctx=0] vs a[ctx=32]" in flat
    assert "per-case differences of a[ctx=0] and a[ctx=32]" in flat
    assert "a and a" not in flat and "subject a:" not in flat


def test_an_unreachable_goal_says_so_in_the_run_and_in_the_plan(lab):
    goal = ("goal:\n  hypothesis: recall falls by more than 0.05\n  metric: recall\n"
            "  direction: decrease\n  min_effect: 0.05\n")
    comparison_experiment(lab, n_must=18, n_not=6, trials=3, control=0.0,
                          variants={"treatment": 0.0}, goal=goal)
    r = ix_in_process("run", "--lab", str(lab), env={"COLUMNS": "80"})
    assert r.code in (0, 1), r.output
    flat = _flat(r.stdout)
    assert FLOOR in flat
    assert "to settle it: about" in flat and "if the true effect is 0 (twice min_effect is " \
        "-0.1: capped at the room the control recall 0.000 leaves)" in flat
    p = _real_at_80("plan", "e", "--lab", str(lab))
    assert p.code == 0, p.output
    flat = _flat(p.stdout)
    assert FLOOR in flat and "(supported 0.00, refuted" in flat
    assert "sized from the latest run's rates (control vs treatment)" in flat
    j = ix_in_process("plan", "e", "--lab", str(lab), "--json")
    [answer] = [a for a in json.loads(j.stdout)["answers"] if a["question"] == "goal"]
    assert answer["reachable"] == {"verdicts": ["refuted"], "room": 0.0, "why": FLOOR}
    assert (answer["effect"], answer["effect_asked"], answer["p_supported"]) == (0.0, -0.1, 0.0)
