"""A context × subjects × sweep experiment through the real `ix run` (DESIGN.md §7): only
within-factor comparisons are made and printed, and the interaction of each subject's trend
with the control's is there, with its interval and P. (The report read after it runs in
process.)"""

import json
import re

from conftest import ix_in_process, run_ix, write
from ix.eval.schemas import summary_problems

LENGTHS = (0, 8, 32)


def factorial_lab(lab):
    exp = lab / "e"
    rates = ", ".join(f"must-{i:02d}: 0.9" for i in range(10))
    write(exp / "experiment.yaml", f"""
        name: e
        trials: 5
        sensor: {{kind: activation, skill: csv}}
        subjects:
          - name: only
            runtime: {{kind: mock, activation_rates: {{{rates}}}, default_rate: 0.05,
                      context_decay: {{half_life: 64}}}}
          - name: plus
            runtime: {{kind: mock, activation_rates: {{{rates}}}, default_rate: 0.05,
                      context_decay: {{half_life: 4}}}}
        sweep:
          context_decay.half_life: [64, 16]
        context:
          prefix: builtin:coding-session
          lengths: [0, 8, 32]
        """)
    for i in range(10):
        write(exp / "cases" / f"must-{i:02d}.md",
              f"---\nexpectation: must_trigger\n---\nProfile data{i}.csv please.\n")
        write(exp / "cases" / f"not-{i:02d}.md",
              f"---\nexpectation: should_not_trigger\n---\nA haiku about rain, {i}.\n")
    return exp


def _where(name: str) -> tuple[str, int]:
    condition, length = name[:-1].rsplit("[ctx=", 1)
    return condition, int(length)


def test_a_factorial_run_prints_only_within_factor_comparisons_and_the_interaction(lab):
    exp = factorial_lab(lab)
    r = run_ix("run", "--lab", str(lab), "--detail", env={"COLUMNS": "80"})
    assert r.code == 0, r.output
    summary = json.loads((exp / "results" / "summary-latest.json").read_text())
    assert summary_problems(summary) == []
    cell = "only[context_decay.half_life=16]"
    assert len(summary["subjects"]) == 3 * len(LENGTHS)
    # one factor at a time: the control condition against each other one, length by length
    pairs = [(_where(c["control"]), _where(c["variant"])) for c in summary["comparisons"]]
    assert pairs == [(("only", n), (v, n)) for v in (cell, "plus") for n in LENGTHS]
    assert [c["factor"] for c in summary["comparisons"]] == ["sweep"] * 3 + ["subject"] * 3
    # the interaction: every subject but the control, with interval and P
    by = {s["subject"]: s for s in summary["context"]["subjects"]}
    assert set(by) == {"only", cell, "plus"} and by["only"].get("interaction") is None
    for name in (cell, "plus"):
        i = by[name]["interaction"]
        lo, hi = i["diff_ci"]
        assert i["versus"] == "only" and lo <= i["diff"] <= hi and 0 <= i["p_lower"] <= 1
        assert i["n_cases"] == 10 and i["family"] == "interaction"
    assert by["plus"]["interaction"]["diff"] < 0  # plus forgets faster (half-life 4 vs 64)
    # the lengths of each subject: one Holm family
    assert {v["family"] for v in by["plus"]["versus_shortest"]} == {"context:plus"}

    out = r.stdout
    assert max(len(line) for line in out.splitlines() if str(lab) not in line) <= 80
    flat = " ".join(out.split())
    # no table or sentence pairs two lengths, or a subject with another at another length
    for control, variant in re.findall(r"(\S+) vs (\S+) \(control\)", flat):
        assert "[ctx=" not in control + variant, (control, variant)
    assert f"{cell} vs only (control)" in flat and "plus vs only (control)" in flat
    assert flat.count("interaction with only (trend − its trend):") == 2
    assert "P(declines faster)" in flat and "p Holm" in flat
    assert re.search(r"P\(best\) by \S+ at each context length", flat)

    report = json.loads(ix_in_process("report", "--lab", str(lab), "--json", cwd=exp).stdout)
    sentences = report["answer"]["comparisons"]
    assert [s.split(" vs ")[0] for s in sentences] == [cell, "plus"]
    assert all("per doubling against the control's" in s for s in sentences)
    assert [a["length"] for a in report["sweep"]["rows"][0]["by_length"]] == list(LENGTHS)
