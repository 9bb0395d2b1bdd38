"""`ix calibrate` in process (`ix.api.calibrate`): a mock "expensive" subject with a latency
beside `lexical` as its proxy, the statistics checked against independent references
(exact fractions, scipy), the common seeds, the candidates' ranking and the bad inputs."""

import json
from fractions import Fraction
from pathlib import Path

import pytest
from scipy import stats

from calibrate_lab import BAD, make_lab, mock
from ix.api.calibrate import Settings, calibrate
from ix.api.loading import check
from ix.domain.errors import ConfigError
from ix.engine.calibrate import PROXY_SUFFIX, sample_cases
from ix.engine.plan import trial_seed
from ix.engine.proxies import proxy_runtime
from ix.lab.loader import load_experiment

SUBJECT = "  - name: claude\n    runtime: {runtime}\n    skills: [table-profile, git-helper]\n"


def _lab(tmp_path: Path, rate: float = 0.9, proxy: str = "lexical") -> Path:
    subject = SUBJECT.format(runtime=mock(rate)) + (f"    proxy: {proxy}\n" if proxy else "")
    return make_lab(tmp_path / "lab", subject)


def _lines(lab: Path, run_id: str) -> list[dict]:
    text = (lab / "profiling" / "results" / "trials.jsonl").read_text(encoding="utf-8")
    return [x for x in map(json.loads, text.splitlines()) if x.get("run_id") == run_id]


def test_a_lexical_proxy_of_a_mock_subject_against_references(tmp_path):
    lab = _lab(tmp_path)
    out = calibrate(lab, "profiling", Settings(n=20))
    assert out["status"] == "completed" and out["n"] == 20 and out["trials"] == 3
    a = out["agreement"]
    # the answer first, in one line
    assert out["verdict"].startswith(f"lexical agrees with claude on {a['agreed']}/20 cases, "
                                     f"kappa {a['kappa']['value']:.2f} [")
    assert out["good_enough"] is (a["kappa"]["value"] >= 0.6 and a["kappa"]["ci"][0] >= 0.3)
    # the verdicts recomputed from the trial log: a case's majority vote of its 3 trials
    lines = _lines(lab, out["run_id"])
    votes: dict[tuple[str, str], list[bool]] = {}
    for x in lines:
        votes.setdefault((x["subject"], x["probe_id"]), []).append(x["reading"]["passed"])
    cases = sorted({p for _, p in votes})
    assert len(cases) == 20
    subject = {c: sum(votes["claude", c]) / 3 for c in cases}
    proxy = {c: sum(votes["claude" + PROXY_SUFFIX, c]) / 3 for c in cases}
    s = [subject[c] > 0.5 for c in cases]
    p = [proxy[c] > 0.5 for c in cases]
    tp = sum(x and y for x, y in zip(s, p, strict=True))
    tn = sum(not x and not y for x, y in zip(s, p, strict=True))
    fp = sum(y and not x for x, y in zip(s, p, strict=True))
    fn = sum(x and not y for x, y in zip(s, p, strict=True))
    assert (a["tp"], a["tn"], a["fp"], a["fn"], a["agreed"]) == (tp, tn, fp, fn, tp + tn)
    assert Fraction(a["sensitivity"]["value"]).limit_denominator(100) == Fraction(tp, tp + fn)
    assert Fraction(a["specificity"]["value"]).limit_denominator(100) == Fraction(tn, tn + fp)
    n = Fraction(20)
    po = Fraction(tp + tn) / n
    pe = (Fraction(tp + fp) / n) * (Fraction(tp + fn) / n) \
        + (Fraction(tn + fn) / n) * (Fraction(tn + fp) / n)
    assert a["kappa"]["value"] == pytest.approx(float((po - pe) / (1 - pe)), abs=1e-6)
    rho = stats.spearmanr([proxy[c] for c in cases], [subject[c] for c in cases]).statistic
    assert a["rate_correlation"]["value"] == pytest.approx(rho, abs=1e-6)
    for e in (a["sensitivity"], a["specificity"], a["kappa"], a["rate_correlation"]):
        assert e["ci"][0] <= e["value"] <= e["ci"][1]
    # common random numbers: the subject and its proxy drew the same seed per (case, trial)
    seeds: dict[tuple[str, int], set[int]] = {}
    for x in lines:
        seeds.setdefault((x["probe_id"], x["trial"]), set()).add(x["seed"])
    assert len(seeds) == 60 and all(len(v) == 1 for v in seeds.values())
    # a normal run of the experiment, its command recorded
    assert Path(out["run_dir"]).parent == lab / "profiling" / "results" / "runs"
    assert out["ranking"]["note"] == "not enough candidates: 1 (Kendall's tau needs at least 3)"
    assert out["duration_ms"]["subject"] >= 5  # its latency


def test_the_sample_is_seeded_and_the_same_for_both_and_a_weak_proxy_is_not_good_enough(
        tmp_path):
    lab = _lab(tmp_path)
    cases = load_experiment(lab / "profiling").experiment.cases
    first = [c.id for c in sample_cases(cases, 10, 3)]
    assert first == [c.id for c in sample_cases(cases, 10, 3)] != \
        [c.id for c in sample_cases(cases, 10, 4)]
    assert len(sample_cases(cases, 99, 0)) == 24
    out = calibrate(lab, "profiling", Settings(n=10, seed=3,
                                               proxy="{kind: lexical, threshold: 99}"))
    lines = _lines(lab, out["run_id"])
    assert {x["probe_id"] for x in lines} == set(first) and out["seed"] == 3
    assert {x["seed"] for x in lines if x["trial"] == 0 and x["probe_id"] == first[0]} == \
        {trial_seed(3, first[0], 0)}  # --seed draws the trials too
    assert out["proxy"] == {"name": "lexical", "as_given": "{kind: lexical, threshold: 99}",
                            "runtime": {"kind": "lexical", "threshold": 99}}
    assert out["agreement"]["sensitivity"]["value"] == 0.0  # it never fires
    assert out["good_enough"] is False and out["verdict"].endswith("not good enough to screen")


def _alt(lab: Path, name: str, description: str) -> str:
    folder = lab / "alt" / name / "table-profile"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: table-profile\ndescription: '{description}'"
                                     "\n---\n", encoding="utf-8")
    return str(folder / "SKILL.md")


def test_the_proxy_ranks_the_experiments_subjects_as_they_rank_themselves(tmp_path):
    lab = tmp_path / "lab"
    lab.mkdir()
    mid = _alt(lab, "mid", "Profile a table, its columns and nulls.")
    bad = _alt(lab, "bad", BAD)
    subjects = (f"  - name: good\n    runtime: {mock(0.95)}\n    skills: [table-profile]\n"
                "    proxy: lexical\n"
                f"  - name: mid\n    runtime: {mock(0.6)}\n    skills: ['{mid}']\n"
                f"  - name: bad\n    runtime: {mock(0.1)}\n    skills: ['{bad}']\n")
    make_lab(lab, subjects)
    out = calibrate(lab, "profiling", Settings(n=24))
    r = out["ranking"]
    assert [c["name"] for c in r["candidates"]] == ["good", "mid", "bad"]
    expected = stats.kendalltau([c["subject"] for c in r["candidates"]],
                                [c["proxy"] for c in r["candidates"]]).statistic
    assert r["note"] is None and r["tau"]["value"] == pytest.approx(expected) == 1.0
    assert r["tau"]["ci"][0] <= 1.0 == r["tau"]["ci"][1]
    # the proxy named as a subject of the experiment: its runtime, the others' skills
    named = calibrate(lab, "profiling", Settings(n=24, proxy="bad"))
    assert named["proxy"]["runtime"]["activation_rates"]["must-000"] == 0.1
    assert [c["name"] for c in named["ranking"]["candidates"]] == ["good", "mid"]
    assert named["ranking"]["tau"] is None and "not enough" in named["ranking"]["note"]


def test_an_optimize_sessions_candidates_are_ranked_with_session(tmp_path):
    lab = _lab(tmp_path)
    folder = lab / "profiling" / "results" / "optimize" / "opt-20261130-120000-abcdef"
    folder.mkdir(parents=True)
    (folder / "optimize.json").write_text(json.dumps({
        "skill": "table-profile", "original": {"description": "Profile tables."},
        "rounds": [{"candidates": [{"id": "r1c1", "description": "Columns and nulls."},
                                   {"id": "r1c2", "description": BAD}]}]}), encoding="utf-8")
    out = calibrate(lab, "profiling", Settings(n=8, session=folder.name))
    names = [c["name"] for c in out["ranking"]["candidates"]]
    assert names == ["claude", "claude-r1c1", "claude-r1c2"]
    assert out["ranking"]["cases"] == 8 and out["ranking"]["note"] is None
    with pytest.raises(ConfigError) as bad:
        calibrate(lab, "profiling", Settings(n=8, session="opt-nope"))
    assert bad.value.field == "--session"


def test_how_a_proxy_is_spelt_resolves_to_a_runtime(tmp_path):
    lab = make_lab(tmp_path / "lab", "  - name: s\n    runtime: {kind: lexical, temperature: "
                   "0}\n    skills: [table-profile]\n  - name: t\n    runtime: "
                   f"{mock(0.5)}\n    skills: [table-profile]\n")
    loaded = load_experiment(lab / "profiling")
    s = loaded.experiment.subjects[0]

    def of(given):
        return proxy_runtime(loaded, s, given, file=None, field="--proxy")

    assert of("{kind: lexical, threshold: 3}")[1] == {"kind": "lexical", "temperature": 0,
                                                       "threshold": 3}  # merged: its kind
    assert of({"kind": "random", "p": 0.2})[1] == {"kind": "random", "p": 0.2}  # replaced
    assert of("lexical")[1] == {"kind": "lexical", "temperature": 0}
    assert of("mock") == ("mock", {"kind": "mock", "default_rate": 0.5}, None)  # registry
    assert of("claude-haiku")[1] == {"kind": "claude-code", "model": "haiku"}
    label, runtime, named = of("t")
    assert (label, named, runtime["kind"]) == ("t", "t", "mock")
    for given, words in (("s", "the subject itself"), ("nope", "unknown proxy 'nope'"),
                         ("{threshold: 3}", "needs a 'kind'")):
        with pytest.raises(ConfigError, match=words) as exc:
            of(given)
        assert exc.value.field == "--proxy"


def test_bad_input_names_the_file_and_the_field_and_writes_nothing(tmp_path):
    lab = _lab(tmp_path, proxy="nope")
    results = lab / "profiling" / "results"
    with pytest.raises(ConfigError, match="unknown proxy 'nope'") as exc:
        calibrate(lab, "profiling")
    assert exc.value.field == "subjects[0].proxy"
    assert str(exc.value.file).endswith("experiment.yaml") and not results.exists()
    with pytest.raises(ConfigError, match="has no `proxy:`") as exc:
        calibrate(_lab(tmp_path / "b", proxy=""), "profiling")
    assert exc.value.field == "--proxy"
    with pytest.raises(ConfigError, match="not a subject") as exc:
        calibrate(lab, "profiling", Settings(subject="nobody", proxy="lexical"))
    assert exc.value.field == "--subject"
    bad = _lab(tmp_path / "c", proxy="{threshold: 1}")
    with pytest.raises(ConfigError) as exc:
        calibrate(bad, "profiling")
    assert exc.value.field == "subjects[0].proxy" and "kind" in exc.value.message
    assert not results.exists()


def test_ix_validate_checks_each_proxy_and_its_options(tmp_path):
    cases = (("nope", "subjects[0].proxy", "unknown proxy 'nope'"),
             ("{kind: lexical, bogus: 1}", "subjects[0].proxy.bogus", ""),
             ("claude", "subjects[0].proxy", "the subject itself"))
    for i, (proxy, field, words) in enumerate(cases):
        lab = _lab(tmp_path / str(i), proxy=proxy)
        plan, problems = check(lab / "profiling", lab)
        assert plan is None and [p.field for p in problems] == [field], problems
        assert words in problems[0].message and str(problems[0].file).endswith("yaml")
    good = _lab(tmp_path / "good")
    assert check(good / "profiling", good)[1] == []
