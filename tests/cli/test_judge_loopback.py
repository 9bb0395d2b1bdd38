"""A judge with known error rates, end to end (issue 36): the real `ix` runs an experiment
whose `llm_judge` is the `anthropic` runtime pointed at a loopback Messages API; that server
answers each case's grading request from the truth the case's prompt carries, passing a truly
passing case with probability TPR and failing a truly failing one with probability TNR
(seeded by the request's content: the run is the same every time). People's labels (the
truth) of a subset are imported with `ix label --import`; `ix judge check --json` must then
recover the judge's error rates and the true pass rate within its intervals, with the point
estimates `ix.stats.judges` gives on exactly the pairs the server scripted. (`ix label RUN`
over a pipe is tested in test_judge_check.py.)"""

import hashlib
import json
import re
from pathlib import Path

import pytest
from fake_llm_servers import FAKE_KEY, FakeLLMServer, Reply, Request, text_reply

from conftest import ix_in_process, run_ix, write
from ix.stats import judges
from ix.stats.intervals import beta_interval

CASES = 80
LABELLED = 64               # people labelled case-000 .. case-063
TPR, TNR = 0.95, 0.55       # a lenient judge: it passes 45% of what truly fails
#: Seeds the server's draws. The run is one draw: its intervals hold the truth in about 93%
#: of salts, and its raw pass rate falls outside the corrected interval in about half (80
#: cases make that interval wide); this salt is one where both happen, and never changes.
SALT = "ix-36"
MARK = re.compile(r"(case-\d{3}) is truly (PASS|FAIL)")


def truly_passes(i: int) -> bool:
    return i % 5 == 0       # 16 of the 80 cases: a true pass rate of 0.2


def draw(case_id: str, truth: str) -> float:
    """The server's uniform draw for a case: a hash of what the request says of it."""
    digest = hashlib.sha256(f"{SALT}:{case_id} is truly {truth}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def population_kappa(tpr: float, tnr: float, rate: float) -> float:
    """Cohen's κ of a judge with these error rates over a population with this pass rate."""
    judge_pass = rate * tpr + (1 - rate) * (1 - tnr)
    observed = rate * tpr + (1 - rate) * tnr
    chance = judge_pass * rate + (1 - judge_pass) * (1 - rate)
    return (observed - chance) / (1 - chance)


def inside(x: float, ci: list[float]) -> bool:
    return ci[0] - 1e-9 <= x <= ci[1] + 1e-9


@pytest.fixture
def scripted_judge():
    """The loopback API, and what it decided per case (case id -> judged pass)."""
    decided: dict[str, bool] = {}

    def grade(request: Request) -> Reply:
        found = MARK.search(request.prompt_text())
        assert found, request.prompt_text()
        case_id, truth = found.groups()
        u = draw(case_id, truth)
        passed = u < TPR if truth == "PASS" else u >= TNR
        decided[case_id] = passed
        return text_reply(json.dumps({"scores": {"right": 10 if passed else 0},
                                      "reasoning": "scripted"}))

    with FakeLLMServer("anthropic", router=grade) as api:
        yield api, decided


def test_judge_check_recovers_a_scripted_judges_error_rates_and_the_true_rate(
        lab: Path, tmp_path: Path, scripted_judge) -> None:
    api, decided = scripted_judge
    exp = lab / "e"
    write(exp / "experiment.yaml", """
        name: e
        trials: 1
        runtime: {kind: mock}
        sensors:
          - {kind: llm_judge, agent: rubric.md}
        """)
    write(exp / "rubric.md", f"""---
name: made-right
runtime: {{kind: anthropic, base_url: "{api.base_url}", api_key_env: JUDGE_KEY}}
model: claude-sonnet-4-5
dimensions: [right]
scale: [0, 10]
---
Grade this case: {{{{ probe.prompt }}}}
Answer with JSON only: {{"scores": {{"right": 0-10}}, "reasoning": "..."}}
""")
    truth = {f"case-{i:03d}": truly_passes(i) for i in range(CASES)}
    for case_id, passes in truth.items():
        write(exp / "cases" / f"{case_id}.md", "---\nexpectation: must_trigger\n---\n"
              f"{case_id} is truly {'PASS' if passes else 'FAIL'}\n")
    # the run is set-up here, the commands below are under test: in process
    run = ix_in_process("run", "--lab", str(lab), "e", env={"JUDGE_KEY": FAKE_KEY})
    assert run.code in (0, 1), run.output
    requests = api.api_requests()
    assert len(requests) == CASES and set(decided) == set(truth)
    assert all(FAKE_KEY in r.headers.get("authorization", "") + r.headers.get("x-api-key", "")
               for r in requests)  # the key the test set, as the SDK sends it

    table = tmp_path / "labels.csv"
    labelled = sorted(truth)[:LABELLED]
    table.write_text("probe_id,sensor,value\n" + "".join(
        f"{c},made-right,{'pass' if truth[c] else 'fail'}\n" for c in labelled))
    r = run_ix("label", "--import", str(table), "--experiment", "e", "--lab", str(lab),
               "--labeller", "ana")
    assert r.code == 0 and f"added {LABELLED} label(s)" in r.stdout, r.output

    r = run_ix("judge", "check", "e", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    [entry] = json.loads(r.stdout)["judges"]
    true_rate = sum(truth.values()) / CASES
    passed = sum(decided.values())
    assert entry["labelled"] == LABELLED
    assert entry["judged_rate"]["passed"] == passed and entry["judged_rate"]["judged"] == CASES

    # the truth within every interval
    assert inside(TPR, entry["tpr"]["ci"]), entry["tpr"]
    assert inside(TNR, entry["tnr"]["ci"]), entry["tnr"]
    assert inside(population_kappa(TPR, TNR, true_rate), entry["kappa"]["ci"]), entry["kappa"]
    corrected = entry["corrected_rate"]
    assert inside(true_rate, corrected["ci"]) and not corrected["uninformative"], corrected

    # the figures are ix.stats.judges' on exactly the pairs the server scripted
    want = judges.agreement([decided[c] for c in labelled], [truth[c] for c in labelled])
    for name in ("accuracy", "tpr", "tnr", "kappa"):
        got, estimate = entry[name], getattr(want, name)
        assert got["value"] == pytest.approx(estimate.value, abs=1e-6), name
        assert got["ci"] == pytest.approx([estimate.lo, estimate.hi], abs=1e-6), name
    rate = judges.corrected_rate(passed, CASES, want.tp, want.tp + want.fn, want.tn,
                                 want.tn + want.fp).rate
    assert corrected["value"] == pytest.approx(rate.value, abs=1e-6)
    assert corrected["ci"] == pytest.approx([rate.lo, rate.hi], abs=1e-6)

    # the correction matters: the judge's own rate, and its interval, miss the truth
    raw = passed / CASES
    assert not inside(raw, corrected["ci"]), (raw, corrected)
    assert not inside(true_rate, list(beta_interval(passed, CASES))), raw
