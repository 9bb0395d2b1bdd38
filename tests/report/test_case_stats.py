"""The report's per-case statistics: score percentiles with order-statistic intervals, and
`ix report --by PROPERTY` (Spearman's r of each case's right share with a case property)."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from conftest import case, ix_in_process, run_ix, write
from ix.domain.errors import ConfigError
from ix.report import case_stats


def _summary(scores_by_subject: dict[str, list[tuple[str, str, float | None]]]) -> dict:
    return {"subjects": [{"name": name, "probe_results": [
        {"probe_id": cid, "expectation": exp, "score": score} for cid, exp, score in cases]}
        for name, cases in scores_by_subject.items()]}


def _exact_ranks(n: int, q: float, level: float) -> tuple[int, int, Fraction]:
    """The ranks and coverage of the equal-tailed order-statistic interval, from the binomial
    written out in exact fractions (independent of scipy's bdtr)."""
    qf = Fraction(q).limit_denominator(1000)
    tail = (1 - Fraction(level).limit_denominator(1000)) / 2
    pmf = [math.comb(n, k) * qf ** k * (1 - qf) ** (n - k) for k in range(n + 1)]
    cdf = [sum(pmf[:k + 1]) for k in range(n + 1)]
    low = max([k + 1 for k in range(n) if cdf[k] <= tail], default=0)
    up = min([k + 1 for k in range(n) if cdf[k] >= 1 - tail], default=n + 1)
    below = cdf[low - 1] if low >= 1 else Fraction(0)
    upto = cdf[up - 1] if up <= n else Fraction(1)
    return low, up, upto - below


@pytest.mark.parametrize("n", [3, 12, 40])
def test_score_percentiles_are_the_exact_order_statistic_intervals(n):
    rng = np.random.default_rng(n)
    scores = [round(float(x), 3) for x in rng.uniform(size=n)]
    out = case_stats.score_percentiles(
        _summary({"s": [(f"c{i}", "must_trigger", x) for i, x in enumerate(scores)]}))
    (row,) = out["by_subject"]["s"]
    assert (row["scope"], row["n"]) == ("must", n)
    ordered = sorted(scores)
    for cell, q in zip(row["percentiles"], (0.1, 0.5, 0.9), strict=True):
        low, up, coverage = _exact_ranks(n, q, 0.95)
        assert cell["value"] == ordered[max(1, math.ceil(n * q)) - 1]  # nearest rank
        assert cell["ci"] == [ordered[low - 1] if low else 0.0, ordered[up - 1] if up <= n
                              else 1.0]  # an open end is the score's own bound
        assert cell["coverage"] == pytest.approx(float(coverage), abs=1e-6)
        assert cell["ci"][0] <= cell["value"] <= cell["ci"][1]


def test_score_percentiles_are_per_scope_and_skip_cases_without_a_score():
    out = case_stats.score_percentiles(_summary({"s": [
        ("m1", "must_trigger", 1.0), ("m2", "must_trigger", None),
        ("n1", "should_not_trigger", 0.0), ("n2", "should_not_trigger", 0.2)]}))
    assert [(r["scope"], r["n"]) for r in out["by_subject"]["s"]] == [("must", 1), ("not", 2)]
    assert case_stats.score_percentiles(_summary({"s": [("m", "must_trigger", None)]})) is None


def test_percentile_intervals_cover_the_population_percentile_of_per_case_rates():
    """Per-case scores are k/K (ties, a discrete population): the interval still covers the
    population's q-quantile at least at its level (simulated; the exact guarantee's check)."""
    rng = np.random.default_rng(7)
    trials, reps = 5, 400
    for a, b in ((0.5, 0.5), (2.0, 5.0)):
        # the population of per-case scores: beta-binomial(K, a, b) / K, exactly
        pmf = stats.betabinom.pmf(np.arange(trials + 1), trials, a, b)
        cdf = np.cumsum(pmf)
        for n in (10, 30):
            for q in (0.1, 0.5, 0.9):
                truth = np.searchsorted(cdf, q - 1e-12) / trials  # inf{x: F(x) >= q}
                hits = 0
                for _ in range(reps):
                    scores = rng.binomial(trials, rng.beta(a, b, size=n)) / trials
                    cell = case_stats._percentile(list(scores), q, 0.95)
                    hits += cell["ci"][0] <= truth <= cell["ci"][1]
                assert hits / reps >= 0.93, (a, b, n, q, hits / reps)


def test_the_right_share_correlation_is_spearmans_r_and_its_interval_covers():
    rng = np.random.default_rng(3)
    shares = rng.uniform(size=25)
    lengths = rng.integers(10, 400, size=25)
    summary = _summary({"s": [(f"c{i}", "must_trigger" if i % 2 else "should_not_trigger",
                               float(x) if i % 2 else 1 - float(x)) for i, x in enumerate(shares)]})
    props = {f"c{i}": {"prompt_length": int(v)} for i, v in enumerate(lengths)}
    props.pop("c3")  # one case without the property is left out, and counted
    out = case_stats.correlations(summary, props, ["prompt_length"])
    cell = out["properties"][0]["by_subject"]["s"]
    keep = [i for i in range(25) if i != 3]
    assert cell["r"] == pytest.approx(stats.spearmanr(lengths[keep], shares[keep]).statistic,
                                      abs=1e-6)
    assert (cell["n"], cell["missing"]) == (24, 1)
    assert cell["ci"][0] < cell["r"] < cell["ci"][1]
    # coverage of the population Spearman correlation, bivariate normal cases
    for n, rho in ((10, 0.0), (10, 0.7), (30, 0.5)):
        truth, hits = 6 / math.pi * math.asin(rho / 2), 0
        for _ in range(300):
            x = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n)
            got = case_stats.correlations(
                _summary({"s": [(f"c{i}", "must_trigger", float(v))
                                for i, v in enumerate(x[:, 1])]}),
                {f"c{i}": {"metadata": {"x": float(v)}} for i, v in enumerate(x[:, 0])},
                ["metadata.x"])["properties"][0]["by_subject"]["s"]
            hits += got["ci"][0] <= truth <= got["ci"][1]
        assert hits / 300 >= 0.93, (n, rho, hits / 300)


def test_properties_read_tags_metadata_lengths_and_refuse_the_unknown():
    props = {"tags": ["hard-math"], "metadata": {"a": {"b": 2}, "flag": True, "s": "x"},
             "difficulty": 3, "prompt_length": 40, "history_length": 0}
    value = case_stats.property_value
    assert value(props, "tag:hard-math") == 1.0 and value(props, "tag:other") == 0.0
    assert value(props, "metadata.a.b") == 2.0 and value(props, "metadata.flag") == 1.0
    assert value(props, "metadata.s") is None and value(props, "metadata.none") is None
    assert (value(props, "difficulty"), value(props, "history_length")) == (3.0, 0.0)
    assert value({"difficulty": None}, "difficulty") is None
    for bad in ("tag:", "metadata.", "length", "tags"):
        with pytest.raises(ConfigError, match="--by"):
            case_stats.check_property(bad)


def test_ix_report_by_correlates_with_case_files_and_prints_percentiles(lab):
    d = lab / "e"
    rates = {f"c{i}": r for i, r in enumerate((0.95, 0.9, 0.8, 0.7, 0.3, 0.2, 0.1, 0.05))}
    write(d / "experiment.yaml", "name: e\nskill: t\ntrials: 4\nruntime: {kind: mock, "
          f"activation_rates: {json.dumps(rates)}}}\n")
    for i in range(8):
        case(d, f"c{i}", "must_trigger", "word " * (i + 1),
             extra=f"difficulty: {('easy', 'medium', 'hard')[i * 3 // 8]}\n"
                   f"metadata: {{level: {i}}}\n" + ("tags: [late]\n" if i > 3 else ""))
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    out = ix_in_process("report", "e", "--lab", str(lab), "--format", "json", "--by",
                        "metadata.level", "--by", "difficulty", "--by", "tag:late")
    assert out.code == 0, out.stderr
    data = json.loads(out.stdout)
    summary = json.loads((d / "results" / "summary-latest.json").read_text(encoding="utf-8"))
    scores = {p["probe_id"]: p["score"] for p in summary["probe_results"]}
    ids = sorted(scores)
    for prop in data["correlations"]["properties"]:
        cell = prop["by_subject"]["t"]
        x = {"metadata.level": [int(i[1:]) for i in ids],
             "difficulty": [i * 3 // 8 for i in range(8)],
             "tag:late": [int(i[1:]) > 3 for i in ids]}[prop["property"]]
        assert cell["r"] == pytest.approx(
            stats.spearmanr(x, [scores[i] for i in ids]).statistic, abs=1e-6)
        assert cell["r"] < 0 and cell["n"] == 8
    assert data["percentiles"]["by_subject"]["t"][0]["n"] == 8
    text = ix_in_process("report", "e", "--lab", str(lab), "--by", "difficulty").stdout
    assert "score percentiles per case" in text and "difficulty ~ right share" in text
    md = ix_in_process("report", "e", "--lab", str(lab), "--by", "difficulty", "--format",
                       "md").stdout
    assert "## Score percentiles per case" in md
    assert r"difficulty \~ right share" in md  # Markdown's strikethrough mark, escaped
    page = lab / "r.html"
    assert ix_in_process("report", "e", "--lab", str(lab), "--by", "difficulty", "--format",
                         "html", "--out", str(page)).code == 0
    html = page.read_text(encoding="utf-8")
    p50 = data["percentiles"]["by_subject"]["t"][0]["percentiles"][1]
    assert 'id="per-case"' in html and "difficulty ~ right share per case, t: r = " in html
    ci = p50["ci"]
    assert f"{p50['value']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" in html  # as the table prints it


def test_ix_report_by_an_unknown_property_exits_2_naming_it(lab):
    d = lab / "e"
    write(d / "experiment.yaml", "name: e\nskill: t\ntrials: 1\nruntime: {kind: mock}\n")
    case(d, "c0", "must_trigger")
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    bad = run_ix("report", "e", "--lab", str(lab), "--by", "colour")
    assert bad.code == 2 and "--by" in bad.stderr and "colour" in bad.stderr
    assert "Traceback" not in bad.stderr
