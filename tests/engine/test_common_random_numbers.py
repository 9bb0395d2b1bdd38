"""Common random numbers (DESIGN.md §2, §7): every subject draws with the same trial seed, so
with `lexical` or `mock` a competitor can only take activations away, case by case and trial
by trial. The seeds come from a real plan (`Plan.each_trial`), as the engine hands them out."""

import asyncio
import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write
from ix.domain.types import Subject
from ix.engine.plan import Plan, build_plan, per_subject_seed, trial_seed, trial_seeds
from ix.engine.run import run_plan
from ix.eval.models import EvalCase
from ix.lab.loader import load_experiment
from ix.runtimes import RuntimeContext, build_runtime
from ix.store.layout import ExperimentDir

CASES = [f"c{i}" for i in range(6)]
TRIALS = 8

# Words that descriptions and prompts share, common and rare alike; names that sort before
# and after the target's, so a competitor lands on either side of it.
VOCABULARY = [
    "csv", "spreadsheet", "excel", "xlsx", "pdf", "docx", "slides", "table", "column", "chart",
    "pivot", "summary", "summarise", "profile", "data", "file", "report", "clean", "missing",
    "values", "sql", "query", "slow", "index", "release", "notes", "git", "changelog",
    "statistics", "trend", "sheet", "convert", "export", "use", "when", "user", "write",
]
NAMES = ["alpha", "beta", "chart-maker", "data-tools", "omega", "sheets", "zeta", "xlsx"]
words = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=20).map(" ".join)


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    """A plan of two subjects, `alone` and `crowded`: only its seeds are used."""
    lab = tmp_path_factory.mktemp("lab")
    d = lab / "crn"
    write(d / "experiment.yaml", f"name: crn\ntrials: {TRIALS}\nruntime: mock\n"
          "sensor: {kind: activation, skill: target}\n"
          "subjects:\n  - name: alone\n  - name: crowded\n")
    for c in CASES:
        write(d / "cases" / f"{c}.md", f"---\nexpectation: must_trigger\n---\n{c}\n")
    return build_plan(load_experiment(d, lab))


def seeds_of(plan: Plan, seed: int) -> dict[tuple[str, str, int], int]:
    """(subject, case, trial) -> the trial seed the engine gives it, at base seed `seed`."""
    return {(k.subject.subject.name, k.case.id, k.trial): k.seed
            for k in dataclasses.replace(plan, seed=seed).each_trial()}


def test_every_subject_draws_the_same_trial_seed(plan):
    seeds = seeds_of(plan, 5)
    for (_, case_id, trial), seed in seeds.items():
        assert seed == seeds[("alone", case_id, trial)] == trial_seed(5, case_id, trial)
        text = f"5:{case_id}:{trial}".encode()
        assert seed == int.from_bytes(hashlib.sha256(text).digest()[:8], "big") >> 1
    assert len(set(seeds.values())) == len(CASES) * TRIALS


def test_per_subject_seeding_is_the_earlier_rule(plan):
    earlier = dataclasses.replace(plan, seeding="per-subject")
    for (subject, case_id, trial), seed in seeds_of(earlier, 5).items():
        text = f"5:{subject}:{case_id}:{trial}".encode()
        assert seed == int.from_bytes(hashlib.sha256(text).digest()[:8], "big") >> 1
        assert seed == per_subject_seed(5, subject, case_id, trial)


def _invoked(runtime, subject: Subject, prompts: dict[str, str],
             seeds: dict[tuple[str, str, int], int]) -> dict[tuple[str, int], str | None]:
    """The skill each (case, trial) of `subject` invoked, with the plan's seeds."""
    async def each():
        out = {}
        for case_id, prompt in prompts.items():
            case = EvalCase(id=case_id, prompt=prompt, expectation="must_trigger")
            for trial in range(TRIALS):
                obs = await runtime.invoke(subject, case,
                                           seed=seeds[(subject.name, case_id, trial)])
                out[case_id, trial] = obs.tool_calls[0].input["skill"] if obs.tool_calls \
                    else None
        return out
    return asyncio.run(each())


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    target=words,
    competitors=st.lists(st.tuples(st.sampled_from(NAMES), words), min_size=1, max_size=4,
                         unique_by=lambda t: t[0]),
    prompts=st.lists(words, min_size=len(CASES), max_size=len(CASES)),
    base=st.integers(0, 2**31),
    temperature=st.sampled_from([0.0, 0.2, 0.5, 1.0, 3.0]),
    threshold=st.sampled_from([0.0, 0.5, 2.0, 5.0]),
)
def test_lexical_a_competitor_only_removes_activations_case_by_case(
        plan, target, competitors, prompts, base, temperature, threshold):
    rt = build_runtime({"kind": "lexical", "temperature": temperature,
                        "threshold": threshold}, RuntimeContext(target_skill="target"))
    skill = {"name": "target", "description": target}
    alone = Subject(name="alone", config={"skills": [skill]})
    crowded = Subject(name="crowded", config={"skills": [skill] + [
        {"name": n, "description": d} for n, d in competitors]})
    seeds = seeds_of(plan, base)
    by_case = dict(zip(CASES, prompts, strict=True))
    before = _invoked(rt, alone, by_case, seeds)
    after = _invoked(rt, crowded, by_case, seeds)
    gained = [k for k, skill in after.items() if skill == "target" and before[k] != "target"]
    assert not gained, gained


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    rates=st.lists(st.floats(0, 1), min_size=len(CASES), max_size=len(CASES)),
    kept=st.lists(st.floats(0, 1), min_size=len(CASES), max_size=len(CASES)),
    base=st.integers(0, 2**31),
)
def test_mock_a_lower_rate_only_removes_activations_case_by_case(plan, rates, kept, base):
    """`crowded` activates each case at most as often as `alone` (a competitor took a share
    `1 - kept` of it): it activates on a subset of `alone`'s (case, trial)s."""
    def mock(rates_of: list[float]):
        return build_runtime({"kind": "mock",
                              "activation_rates": dict(zip(CASES, rates_of, strict=True))},
                             RuntimeContext(target_skill="target"))
    seeds = seeds_of(plan, base)
    by_case = {c: "p" for c in CASES}
    before = _invoked(mock(rates), Subject(name="alone"), by_case, seeds)
    lower = [r * k for r, k in zip(rates, kept, strict=True)]
    after = _invoked(mock(lower), Subject(name="crowded"), by_case, seeds)
    assert not [k for k, skill in after.items() if skill and not before[k]]


def _trials(results: Path) -> list[dict]:
    return [json.loads(line) for line in (results / "trials.jsonl").read_text().splitlines()]


def test_a_run_of_the_coexistence_example_loses_activations_only_to_the_newcomers(example_lab):
    """The issue's report, end to end: with `lexical`, csv-summary next to competitors is
    invoked on a subset of the trials where it is invoked alone (before common seeds, a
    must case "flipped to correct" and recall rose when a competitor was installed)."""
    d = example_lab / "coexistence"
    plan = build_plan(load_experiment(d, example_lab))
    assert run_plan(plan, command=["test"]).status == "completed"
    invoked: dict[str, set[tuple[str, int]]] = {}
    for r in _trials(ExperimentDir.at(d).results):
        if r["reading"]["passed"]:
            invoked.setdefault(r["subject"], set()).add((r["probe_id"], r["trial"]))
    alone, plus_b, plus_bc = (invoked[s] for s in ("a-only", "a-plus-b", "a-plus-b-plus-c"))
    assert plus_bc <= plus_b <= alone
    assert plus_bc < alone  # the newcomers do take trials away


@pytest.mark.parametrize("seed, case_id", [(5, "c1"), (-7, "ünï code/case"), (2**62, "")])
def test_trial_seeds_hash_each_trial_as_trial_seed_does(seed, case_id):
    """The plan's seeds of a case, from its prefix hashed once, are DESIGN.md §2's."""
    assert list(trial_seeds(seed, case_id, 123)) == [trial_seed(seed, case_id, t)
                                                     for t in range(123)]
