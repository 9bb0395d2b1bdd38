"""How a factorial run reads at 80 columns (`ix.report.terminal`): each subject against the
control in one table of lengths, each subject's lengths with a Holm-adjusted p and its
interaction with the control, and flipped cases beyond trial noise only."""

from typing import Any

from rich.console import Console, Group

from ix.report.tables import fit
from ix.report.terminal import by_length_tables, context_parts, flips_text


def text(*parts: Any) -> str:
    """As `ix` prints it: every table fitted to 80 columns, never cut."""
    console = Console(width=80, record=True, color_system=None)
    console.print(fit(Group(*parts)))
    return console.export_text()


def metric(diff: float, p: float) -> dict[str, Any]:
    return {"control": 0.8, "variant": 0.8 + diff, "diff": diff, "diff_median": diff,
            "diff_ci": [diff - 0.1, diff + 0.1], "p_variant_better": 0.5, "p_value": p,
            "p_value_holm": p, "role": "primary", "family": "variants:activation_rate"}


def flip(case: str, beyond: bool | None) -> dict[str, Any]:
    f = {"probe_id": case, "expectation": "must_trigger", "control_score": 1.0,
         "variant_score": 0.0, "now": "wrong"}
    if beyond is not None:
        f.update(p_value=0.001 if beyond else 0.2, beyond_noise=beyond, family="cases")
    return f


def test_each_subject_is_compared_with_the_control_length_by_length_in_one_table():
    comps = [{"control": f"only[ctx={n}]", "variant": f"plus-all[ctx={n}]", "factor": "subject",
              "at_length": n, "flips": [], "metrics": {"activation_rate": metric(-0.1, 0.04)}}
             for n in (0, 8, 64)]
    out = text(by_length_tables({"comparisons": comps, "sensor": "activation"}))
    assert "plus-all vs only (control)" in out and "[ctx=" not in out
    assert "Holm across the 3 comparisons" in out
    assert [line.split()[0] for line in out.splitlines()
            if line.strip()[:2] in ("0 ", "8 ", "64")] == ["0", "8", "64"]
    assert max(len(line) for line in out.splitlines()) <= 80


def test_flips_within_trial_noise_are_counted_not_listed():
    summary = {"comparisons": [
        {"variant": "b", "flips": [flip("c1", True), flip("c2", False), flip("c3", False)]},
        {"variant": "c", "flips": [flip("c4", False)]},
        {"variant": "d", "flips": []}]}
    out = " ".join(text(flips_text(summary)).split())
    assert "b: 1 case(s) flipped beyond trial noise: c1 (1.00→0.00, now wrong); 2 more " \
           "changed within trial noise" in out
    assert "c2" not in out and "c4" not in out
    assert "no case changed its majority vote beyond trial noise in c (1 within noise), d" in out
    # a summary written before the test lists every change, as it did
    old = text(flips_text({"comparisons": [{"variant": "b", "flips": [flip("c9", None)]}]}))
    assert "b: 1 case(s) flipped: c9" in old


def test_the_context_table_shows_holm_adjusted_p_and_the_interaction():
    versus = [{"length": n, "subject": f"s[ctx={n}]", "metric": "activation_rate",
               "diff": -0.2, "diff_ci": [-0.3, -0.1], "p_lower": 0.99, "p_value": 0.01,
               "p_value_holm": 0.02, "family": "context:s"} for n in (8, 32)]
    rows = [{"length": n, "subject": f"s[ctx={n}]", "activation_rate": 0.8,
             "activation_rate_ci": [0.7, 0.9], "recall": 0.9, "recall_ci": [0.8, 1.0]}
            for n in (0, 8, 32)]
    interaction = {"versus": "only", "metric": "activation_rate", "x": "log2(1 + length)",
                   "diff": -0.031, "diff_ci": [-0.05, -0.01], "p_lower": 0.995,
                   "p_value": 0.01, "p_value_holm": 0.01, "family": "interaction",
                   "n_cases": 12}
    context = {"prefix": "builtin:coding-session", "unit": "turns", "lengths": [0, 8, 32],
               "level": 0.95, "subjects": [{"subject": "s", "lengths": rows,
                                            "versus_shortest": versus, "trend": None,
                                            "interaction": interaction}]}
    out = " ".join(text(*context_parts(context)).split())
    assert "p Holm" in out and "P(lower)" not in out and "0.020" in out
    assert ("interaction with only (trend − its trend): -0.031 per doubling [-0.05, -0.01], "
            "P(declines faster) 0.995, p Holm 0.010 (12 cases)") in out
    # a summary written before the adjustment: its P(lower), labelled unadjusted
    for v in versus:
        del v["p_value"], v["p_value_holm"], v["family"]
    old = " ".join(text(*context_parts(context)).split())
    assert "P(lower): unadjusted" in old and "0.990" in old
