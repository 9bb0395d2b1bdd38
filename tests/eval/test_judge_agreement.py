"""A run's judges against people's labels (`ix.eval.judge_agreement`): each label finds the
reading it speaks of (its trial's, else its case's), several labellers count once, and the
figures are `ix.stats.judges`' on exactly the pairs a hand count gives."""

import random

import pytest

from ix.eval.judge_agreement import judge_agreement
from ix.stats import judges
from ix.store.labels import make_label


def record(subject: str, case: str, trial: int, passed: bool, clarity: float) -> dict:
    judged = {"sensor_name": "quality", "passed": passed, "score": clarity / 5,
              "metrics": {"clarity": clarity}}
    return {"run_id": "R", "subject": subject, "probe_id": case, "trial": trial,
            "error": None, "readings": [{"sensor_name": "check", "passed": True}, judged]}


def label(who: str, value, case: str, trial: int | None = None, dimension: str | None = None,
          subject: str = "s") -> dict:
    on_trial = {"run_id": "R", "subject": subject, "trial": trial} if trial is not None else {}
    return make_label({"probe_id": case, "sensor": "quality", "dimension": dimension,
                       "value": value, **on_trial}, labeller=who)


def test_labels_find_their_readings_and_give_the_statistics_of_those_pairs():
    rng = random.Random(3)
    truth = {f"c{i}": rng.random() < 0.6 for i in range(30)}
    records, labels, judge, human = [], [], [], []
    for i, (case, right) in enumerate(truth.items()):
        for trial in range(2):
            says = right if rng.random() < 0.85 else not right
            records.append(record("s", case, trial, says, (4.0 if says else 2.0) - trial))
        if i < 20:  # a case label: every trial of the case
            labels.append(label("ana", right, case))
            judge += [r["readings"][1]["passed"] for r in records[-2:]]
            human += [right, right]
    # trial 0 of c20 labelled on its own, by two people who agree, and a third who ties
    labels += [label("ana", False, "c20", 0), label("bo", False, "c20", 0)]
    judge.append(records[40]["readings"][1]["passed"])
    human.append(False)
    labels += [label("ana", True, "c21", 0), label("bo", False, "c21", 0)]  # a tie
    labels += [label("ana", 4, "c0", 0, "clarity"), label("bo", 2, "c0", 0, "clarity"),
               label("ana", 5, "c1", None, "clarity")]
    records.append({"run_id": "R", "subject": "s", "probe_id": "c0", "trial": 9,
                    "error": {"kind": "timeout"}, "readings": []})  # errored: not judged

    verdict, clarity = judge_agreement(records, labels)
    assert verdict["sensor"] == "quality" and verdict["dimension"] is None
    assert verdict["labelled"] == len(judge) == 41 and verdict["ties"] == 1
    want = judges.agreement(judge, human)
    assert verdict["kappa"]["value"] == pytest.approx(want.kappa.value, abs=1e-6)
    assert verdict["tpr"]["ci"] == [pytest.approx(want.tpr.lo, abs=1e-6),
                                    pytest.approx(want.tpr.hi, abs=1e-6)]
    passed = sum(r["readings"][1]["passed"] for r in records if r["readings"])
    assert verdict["judged_rate"] == {"passed": passed, "judged": 60,
                                      "value": pytest.approx(passed / 60, abs=1e-6)}
    fixed = judges.corrected_rate(passed, 60, want.tp, want.tp + want.fn, want.tn,
                                  want.tn + want.fp)
    assert verdict["corrected_rate"]["value"] == pytest.approx(fixed.rate.value, abs=1e-6)
    # clarity: c0 trial 0 has its own (mean 3), c1's two trials the case's 5
    assert clarity["dimension"] == "clarity" and clarity["labelled"] == 3
    pairs = [(records[0]["readings"][1]["metrics"]["clarity"], 3.0),
             (records[2]["readings"][1]["metrics"]["clarity"], 5.0),
             (records[3]["readings"][1]["metrics"]["clarity"], 5.0)]
    s = judges.score_agreement([j for j, _ in pairs], [h for _, h in pairs])
    assert clarity["spearman"]["value"] == pytest.approx(s.spearman.value, abs=1e-6)
    assert clarity["weighted_kappa"]["value"] == pytest.approx(s.kappa.value, abs=1e-6)


def test_a_sensor_labelled_but_never_judged_says_so():
    [entry] = judge_agreement([], [label("ana", True, "c1")])
    assert entry["labelled"] == 0 and entry["judged_rate"]["value"] is None
    assert entry["accuracy"]["value"] is None  # nothing to agree on: no estimate
