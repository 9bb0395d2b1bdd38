"""`curriculum:`: cases in an adaptive order that finds each subject's frontier, the summary's
`frontier` block, and the report's line."""

import json
from collections import Counter
from pathlib import Path

from conftest import ix_in_process, run_ix, write

RATES = {"strong": {"e1": 0.98, "e2": 0.95, "m1": 0.9, "m2": 0.85, "h1": 0.5, "h2": 0.4},
         "weak": {"e1": 0.8, "e2": 0.7, "m1": 0.3, "m2": 0.2, "h1": 0.05, "h2": 0.05}}
LEVEL = {"e": "easy", "m": "medium", "h": "hard"}


def _experiment(lab: Path, curriculum: str = "{stop_width: 0.9, max_trials: 40}",
                trials: str = "20", levels: dict[str, str] | None = None) -> Path:
    d = lab / "e"
    subjects = "".join(f"  - name: {name}\n    runtime: {{kind: mock, activation_rates: "
                       f"{json.dumps(rates)}}}\n" for name, rates in RATES.items())
    write(d / "experiment.yaml", f"name: e\ntrials: {trials}\nsensor: {{kind: activation, "
          f"skill: t}}\ncurriculum: {curriculum}\nsubjects:\n{subjects}")
    for cid in RATES["strong"]:
        level = (levels or LEVEL)[cid[0]]
        write(d / "cases" / f"{cid}.md",
              f"---\nexpectation: must_trigger\ndifficulty: {level}\n---\nDo {cid}\n")
    return d


def _lines(d: Path) -> list[dict]:
    return [json.loads(line) for line in
            (d / "results" / "trials.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_curriculum_finds_each_subjects_frontier_and_runs_the_same_twice(lab):
    d = _experiment(lab)
    run = ix_in_process("run", "--lab", str(lab))
    assert run.code == 0 and "frontier of strong: difficulty" in run.stdout  # said at once
    first = _lines(d)
    summary = json.loads((d / "results" / "summary-latest.json").read_text(encoding="utf-8"))
    block = summary["frontier"]
    assert (block["by"], block["difficulties"], block["max_trials"]) == (
        "difficulty", [1.0, 2.0, 3.0], 40)
    strong, weak = block["subjects"]["strong"], block["subjects"]["weak"]
    assert strong["estimate"] > weak["estimate"]
    for name, f in block["subjects"].items():
        mine = [t for t in first if t["subject"] == name]
        assert f["trials"] == len(mine) <= 40
        assert f["stopped"] in ("settled", "max_trials")
        assert f["ci"][0] <= f["estimate"] <= f["ci"][1]
        if f["stopped"] == "settled":
            assert f["ci"][1] - f["ci"][0] <= 0.9
        # each case's trials are its first ones, as a fixed run numbers them
        per_case = Counter(t["probe_id"] for t in mine)
        for cid, count in per_case.items():
            assert sorted(t["trial"] for t in mine if t["probe_id"] == cid) == list(range(count))
        # counted by difficulty as the trial lines say
        right = Counter((LEVEL[t["probe_id"][0]], t["reading"]["passed"]) for t in mine)
        assert [(c["right"], c["valid"]) for c in f["by_difficulty"]] == [
            (right[(lvl, True)], right[(lvl, True)] + right[(lvl, False)])
            for lvl in ("easy", "medium", "hard") if right[(lvl, True)] + right[(lvl, False)]]
    # the strong subject spends its trials harder than the weak one
    hard = {n: sum(c["valid"] for c in f["by_difficulty"] if c["difficulty"] == 3.0)
            for n, f in block["subjects"].items()}
    assert hard["strong"] > hard["weak"]
    # the same experiment and seed: the same trials in the same order per subject
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    again = _lines(d)[len(first):]
    for name in RATES:
        assert [(t["probe_id"], t["trial"], t["reading"]["passed"]) for t in first
                if t["subject"] == name] == [(t["probe_id"], t["trial"], t["reading"]["passed"])
                                             for t in again if t["subject"] == name]
    report = json.loads(ix_in_process("report", "e", "--lab", str(lab), "--json").stdout)
    assert report["frontier"] == summary["frontier"]
    text = ix_in_process("report", "e", "--lab", str(lab)).stdout
    assert "frontier of strong: difficulty" in text and "frontier of weak" in text


def test_a_curriculum_is_not_continued(lab):
    _experiment(lab)
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    out = ix_in_process("run", "--lab", str(lab), "--resume")
    assert out.code == 2 and "curriculum" in out.stderr and "new run" in out.stderr


def test_bad_curriculum_settings_exit_2_naming_the_field(lab):
    _experiment(lab, curriculum="{stop_width: -1}")
    bad = run_ix("run", "--lab", str(lab))
    assert bad.code == 2 and "curriculum.stop_width" in bad.stderr
    assert "Traceback" not in bad.stderr and not (lab / "e" / "results").exists()
    for curriculum, trials, levels, field in (
            ("{steps: 3}", "20", None, "curriculum.steps"),
            ("{by: tags}", "20", None, "curriculum.by"),
            ("{max_trials: 0}", "20", None, "curriculum.max_trials"),
            ("true", "auto", None, "curriculum"),
            ("true", "20", {"e": "easy", "m": "easy", "h": "easy"}, "curriculum")):
        _experiment(lab, curriculum=curriculum, trials=trials, levels=levels)
        out = ix_in_process("run", "--lab", str(lab))
        assert out.code == 2 and field in out.stderr, (curriculum, out.stderr)
