"""Every sensor in `ix compare` (issue 20): two runs of a two-sensor
mock experiment (a capability sensor first), each sensor's pass rate in both runs with its
interval and the difference, checked against numbers computed here from trials.jsonl (scipy):
the rates over the cases both runs share (intervals with cases as clusters), the difference
case-level (the mean over cases of the per-case rate difference, a t reference), never trial t
of one run against trial t of the other; the table at 80 columns without a value cut, in
capability wording. The two-sensor JSON and table through the real command; the one-sensor
case, the same contracts, in process."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from pydantic import TypeAdapter
from rich.cells import cell_len
from scipy import stats

from conftest import ix_in_process, run_ix, write
from ix.report.runs import compare_runs
from ix.report.schemas import CompareOutput
from ix.stats.clustered import hierarchical_interval

NARROW = {"COLUMNS": "80"}
SENSORS = ["tool_count", "matcher"]
SUBJECTS = ["baseline-agent", "candidate-agent"]
BEFORE = {"baseline-agent": "{must-001: 0.8, must-002: 0.6, must-003: 0.5, not-001: 0.2}",
          "candidate-agent": "{must-001: 0.4, must-002: 0.9, must-003: 0.7, not-001: 0.1}"}
AFTER = {"baseline-agent": "{must-001: 0.3, must-002: 0.7, must-003: 0.5, not-001: 0.2}",
         "candidate-agent": "{must-001: 1.0, must-002: 1.0, must-003: 0.9, not-001: 0.0, "
                            "must-004: 0.5}"}


def _experiment(d: Path, rates: dict[str, str], sensors: str) -> None:
    subjects = "\n".join(
        f"  - name: {s}\n    runtime: {{kind: mock, skill: target, activation_rates: "
        f"{rates[s]}, error_rates: {{must-002: 0.35, must-003: 0.2}}}}" for s in SUBJECTS)
    write(d / "experiment.yaml", f"name: agent\ntrials: 7\nsubjects:\n{subjects}\n"
                                 f"sensors:\n{sensors}\n")
    for c in ("must-001", "must-002", "must-003"):
        write(d / "cases" / f"{c}.md", f"---\nexpectation: must_trigger\n---\nDo {c}\n")
    write(d / "cases" / "not-001.md", "---\nexpectation: should_not_trigger\n---\nNo\n")


TWO = "  - {kind: tool_count, tool: Skill, min: 1}\n  - {kind: matcher, contains: directly}"


def _two_runs(lab: Path, sensors: str) -> tuple[Path, list[str]]:
    """Run 1; then other rates and one more case (must-004, in run 2 only); run 2."""
    d = lab / "agent"
    _experiment(d, BEFORE, sensors)
    ids = []
    for seed, rates in (("1", BEFORE), ("2", AFTER)):
        if seed == "2":
            _experiment(d, rates, sensors)
            write(d / "cases" / "must-004.md", "---\nexpectation: must_trigger\n---\nDo 4\n")
        r = ix_in_process("run", "agent", "--lab", str(lab), "--seed", seed,
                          "--progress", "none")
        assert r.code in (0, 1), r.output
        ids.append(json.loads((d / "results" / "summary-latest.json").read_text())["run_id"])
    return d, ids


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    lab = tmp_path_factory.mktemp("compare") / "lab"
    d, ids = _two_runs(lab, TWO)
    summaries = [json.loads((d / "results" / "runs" / i / "summary.json").read_text())
                 for i in ids]
    return {"lab": lab, "dir": d, "ids": ids, "summaries": summaries}


def _counts(d: Path, run_id: str) -> dict[str, dict[str, dict[str, list[int]]]]:
    """subject -> sensor -> case -> [passed, valid], from the run's trial lines (the latest
    attempt of each trial; errored trials are read by no sensor)."""
    latest: dict[tuple[str, str, int], dict] = {}
    for raw in (d / "results" / "trials.jsonl").read_text().splitlines():
        line = json.loads(raw)
        if line.get("run_id") != run_id or "probe_id" not in line:
            continue
        key = (line["subject"], line["probe_id"], line["trial"])
        if key not in latest or line["attempt"] >= latest[key]["attempt"]:
            latest[key] = line
    out: dict[str, dict[str, dict[str, list[int]]]] = {}
    for (subject, case, _), line in latest.items():
        if line["error"]:
            continue
        assert [r["sensor_name"] for r in line["readings"]] == SENSORS
        for name, r in zip(SENSORS, line["readings"], strict=True):
            cell = out.setdefault(subject, {}).setdefault(name, {}).setdefault(case, [0, 0])
            cell[0] += bool(r["passed"])
            cell[1] += 1
    return out


def _interval(counts: list[list[int]]) -> list[float]:
    """STATS.md §10: the population pass rate's interval with the cases as clusters (the
    hierarchical model of `trial_level`, issue 32), one-sided where it would exclude the
    pooled rate."""
    k, n = [c[0] for c in counts], [c[1] for c in counts]
    return list(hierarchical_interval(k, n, estimate=sum(k) / sum(n)))


def _case_level(a: list[list[int]], b: list[list[int]]) -> dict[str, float]:
    """STATS.md §3 written out: d_i = rate_b − rate_a per case; the mean with a t reference on
    N − 1 degrees of freedom, SE² = max(s²/N, Σ(v_a + v_b)/N²), v the Beta(k+1, n−k+1)
    variance; truncated to [−1, 1] for the interval; the two-sided t-test for p."""
    ra = np.array([k / n for k, n in a])
    rb = np.array([k / n for k, n in b])
    d = rb - ra
    big_n = len(d)

    def var(k: int, n: int) -> float:
        x, y = k + 1, n - k + 1
        return x * y / ((x + y) ** 2 * (x + y + 1))

    floor = sum(var(*x) + var(*y) for x, y in zip(a, b, strict=True)) / big_n ** 2
    se = math.sqrt(max(d.var(ddof=1) / big_n, floor))
    t = stats.t(big_n - 1, loc=d.mean(), scale=se)
    lo, hi = t.cdf(-1.0), t.cdf(1.0)
    return {"before": ra.mean(), "after": rb.mean(), "diff": d.mean(),
            "lo": t.ppf(lo + 0.025 * (hi - lo)), "hi": t.ppf(lo + 0.975 * (hi - lo)),
            "p_better": 1 - (t.cdf(0.0) - lo) / (hi - lo),
            "p_value": min(1.0, 2 * stats.t.cdf(-abs(d.mean()) / se, big_n - 1)),
            "t_test": stats.ttest_1samp(d, 0).pvalue if d.std() > 0 else 1.0}


def test_every_sensor_of_each_subject_against_the_trials(runs):
    r = run_ix("compare", *runs["ids"], "--lab", str(runs["lab"]), "--json")
    assert r.code == 0, r.output
    result = json.loads(r.stdout)
    TypeAdapter(CompareOutput).validate_python(result, strict=True)  # closed: no stray key
    assert result["sensor"] == "tool_count"  # the wording of activation_rate
    before, after = (_counts(runs["dir"], i) for i in runs["ids"])
    comparisons = {c["subject"]: c for c in result["comparisons"]}
    assert sorted(comparisons) == SUBJECTS
    moved = False
    for subject in SUBJECTS:
        entry = comparisons[subject]
        assert list(entry["sensors"]) == SENSORS
        assert [m["primary"] for m in entry["sensors"].values()] == [True, False]
        for name in SENSORS:
            a, b = before[subject][name], after[subject][name]
            shared = sorted(set(a) & set(b))
            assert "must-004" in b and "must-004" not in shared  # run 2's new case is left out
            assert entry["cases"] == len(shared)
            m = entry["sensors"][name]
            for key, counts in (("rate_before", a), ("rate_after", b)):
                k = sum(counts[c][0] for c in shared)
                n = sum(counts[c][1] for c in shared)
                got = m[key]
                assert (got["passed"], got["n"]) == (k, n)
                assert got["rate"] == pytest.approx(k / n, abs=1e-6)
                assert got["rate_ci"] == pytest.approx(_interval([counts[c] for c in shared]),
                                                       abs=1e-6)
            # the summary's rate of run 2 counts must-004 too: this one is over the shared cases
            summary_n = runs["summaries"][1]["subjects"][SUBJECTS.index(subject)]["sensors"]
            assert m["rate_after"]["n"] < summary_n[name]["n"]
            want = _case_level([a[c] for c in shared], [b[c] for c in shared])
            assert m["n"] == len(shared)
            assert m["paired"] is True
            for key in ("before", "after", "diff", "p_better", "p_value"):
                assert m[key] == pytest.approx(want[key], abs=2e-6), (subject, name, key)
            assert m["diff_ci"] == pytest.approx([want["lo"], want["hi"]], abs=1e-5)
            assert m["diff_ci"][0] <= m["diff"] <= m["diff_ci"][1]
            assert m["p_value"] >= want["t_test"] - 1e-6
            moved = moved or abs(m["diff"]) > 0.1
        # the first sensor is the one that decides the cases: the same counts as activation_rate
        # reads on must_trigger cases (the existing metric, computed by its own code)
        must = [c for c in shared if c.startswith("must")]
        first = _case_level([before[subject]["tool_count"][c] for c in must],
                            [after[subject]["tool_count"][c] for c in must])
        assert entry["metrics"]["activation_rate"]["diff"] == pytest.approx(first["diff"],
                                                                            abs=2e-6)
    assert moved  # the rates changed between the runs: the differences are not all zero


def test_the_table_shows_each_sensor_at_80_columns_whole(runs):
    r = run_ix("compare", *runs["ids"], "--lab", str(runs["lab"]), env=NARROW)
    assert r.code == 0, r.output
    out = r.stdout
    assert not [line for line in out.splitlines() if cell_len(line) > 80]
    assert "…" not in out
    data = compare_runs(runs["summaries"])
    assert out.count("pass rate per sensor [95% CI]") == len(SUBJECTS)
    for entry in data["comparisons"]:
        for name, m in entry["sensors"].items():
            cells = [f"{m[k]['rate']:.2f} [{m[k]['rate_ci'][0]:.2f}, {m[k]['rate_ci'][1]:.2f}]"
                     for k in ("rate_before", "rate_after")]
            delta = f"{m['diff']:+.3f} [{m['diff_ci'][0]:.2f}, {m['diff_ci'][1]:.2f}]"
            # one row of a table, every value whole on it
            row = rf"^{name}\s+│\s+{re.escape(cells[0])}\s+│\s+{re.escape(cells[1])}\s+│\s+" \
                  rf"{re.escape(delta)}$"
            assert re.search(row, out, re.M), (name, cells, delta)
    # a capability experiment: its first sensor's rate is a pass rate, never "activation
    # rate" (the mock's `activation_rates` option is in the configuration diff below)
    assert "pass rate (must)" in out
    assert "activation rate" not in out.lower()


def test_one_sensor_has_its_entry_but_no_table(tmp_path: Path):
    lab = tmp_path / "lab"
    d, ids = _two_runs(lab, "  - {kind: activation, skill: target}")
    r = ix_in_process("compare", *ids, "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    result = json.loads(r.stdout)
    assert result["sensor"] == "activation"
    for entry in result["comparisons"]:
        assert list(entry["sensors"]) == ["activation"]
        m = entry["sensors"]["activation"]
        assert m["primary"] is True
        # one sensor, the first: its case-level difference over every shared case
        counts = [_counts_one(d, i, entry["subject"]) for i in ids]
        shared = sorted(set(counts[0]) & set(counts[1]))
        want = _case_level([counts[0][c] for c in shared], [counts[1][c] for c in shared])
        assert m["diff"] == pytest.approx(want["diff"], abs=2e-6)
    table = ix_in_process("compare", *ids, "--lab", str(lab), env=NARROW)
    assert table.code == 0, table.output
    assert "pass rate per sensor" not in table.stdout
    assert "activation rate" in table.stdout


def _counts_one(d: Path, run_id: str, subject: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    latest: dict[tuple[str, int], dict] = {}
    for raw in (d / "results" / "trials.jsonl").read_text().splitlines():
        line = json.loads(raw)
        if line.get("run_id") == run_id and line.get("subject") == subject:
            key = (line["probe_id"], line["trial"])
            if key not in latest or line["attempt"] >= latest[key]["attempt"]:
                latest[key] = line
    for (case, _), line in latest.items():
        if not line["error"]:
            cell = out.setdefault(case, [0, 0])
            cell[0] += bool(line["reading"]["passed"])
            cell[1] += 1
    return out


def test_summaries_before_1_5_get_no_sensors_key(runs):
    old = [json.loads(json.dumps(s)) for s in runs["summaries"]]
    for s in old:
        for block in s["subjects"]:
            block.pop("sensors")
    for entry in compare_runs(old)["comparisons"]:
        assert "sensors" not in entry
        assert "activation_rate" in entry["metrics"]
