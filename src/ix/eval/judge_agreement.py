"""A run's judges against people's labels (issue 36, STATS.md §14): which reading each label
speaks of, and the agreement, the corrected pass rate and the score agreement they give.

A label on a trial (`run_id`, `subject`, `probe_id`, `trial`) speaks of that trial's reading
by its sensor; a label on a case (`probe_id` alone) of every trial of the case, unless the
trial has its own. Several labellers of one target count once: the majority for pass/fail
(a tie is left out and counted), the mean for a score. The reading that stands of each trial
is the one judged (the caller passes those lines). `ix.stats.judges` computes the rest.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ix.eval.numbers import LEVEL, num
from ix.stats import judges
from ix.stats.continuous import Estimate

Target = tuple[Any, ...]


def judge_agreement(records: Iterable[Mapping[str, Any]], labels: Sequence[Mapping[str, Any]],
                    level: float = LEVEL) -> list[dict[str, Any]]:
    """One entry per labelled sensor (pass/fail) and per labelled (sensor, dimension), in
    the order first labelled: how many readings the labels matched, and the statistics."""
    verdicts, scores, ties = _human(labels)
    sensors = list(dict.fromkeys(label["sensor"] for label in labels))
    pairs: dict[tuple[str, str | None], list[tuple[Any, Any]]] = {}
    judged: dict[str, list[int]] = {}  # sensor -> [passed, judged] over the run
    for record in records:
        if record.get("error"):
            continue
        trial = (record.get("run_id"), record.get("subject"), record.get("probe_id"),
                 record.get("trial"))
        case = (None, None, record.get("probe_id"), None)
        for reading in readings_of(record):
            sensor = str(reading.get("sensor_name"))
            if sensor not in sensors or reading.get("passed") is None:
                continue
            count = judged.setdefault(sensor, [0, 0])
            count[0] += reading["passed"] is True
            count[1] += 1
            human = verdicts.get((sensor, trial))
            if human is None:  # no label of its own: its case's
                human = verdicts.get((sensor, case))
            if human is not None:
                pairs.setdefault((sensor, None), []).append((reading["passed"] is True, human))
            for dimension, value in (reading.get("metrics") or {}).items():
                score = scores.get((sensor, str(dimension), trial))
                if score is None:
                    score = scores.get((sensor, str(dimension), case))
                if score is not None and _number(value):
                    pairs.setdefault((sensor, str(dimension)), []).append((float(value),
                                                                           score))
    out = []
    for sensor in sensors:
        verdict_pairs = pairs.get((sensor, None), [])
        if any(key[0] == sensor for key in verdicts) or ties.get(sensor):
            out.append(_pass_fail(sensor, verdict_pairs, judged.get(sensor, [0, 0]),
                                  ties.get(sensor, 0), level))
        for dimension in dict.fromkeys(d for s, d, _ in scores if s == sensor):
            out.append(_scored(sensor, dimension, pairs.get((sensor, dimension), []), level))
    return out


def _human(labels: Sequence[Mapping[str, Any]]) -> tuple[
        dict[tuple[str, Target], bool], dict[tuple[str, str, Target], float], dict[str, int]]:
    """People's answer per (sensor, target): the majority verdict, the mean score."""
    votes: dict[tuple[str, Target], list[int]] = {}
    sums: dict[tuple[str, str, Target], list[float]] = {}
    for label in labels:
        target = (label["run_id"], label["subject"], label["probe_id"], label["trial"])
        if label["dimension"] is None:
            vote = votes.setdefault((label["sensor"], target), [0, 0])
            vote[0 if label["value"] else 1] += 1
        else:
            cell = sums.setdefault((label["sensor"], label["dimension"], target), [0.0, 0])
            cell[0] += float(label["value"])
            cell[1] += 1
    verdicts: dict[tuple[str, Target], bool] = {}
    ties: dict[str, int] = {}
    for key, (yes, no) in votes.items():
        if yes == no:
            ties[key[0]] = ties.get(key[0], 0) + 1
        else:
            verdicts[key] = yes > no
    return verdicts, {k: s / n for k, (s, n) in sums.items()}, ties


def _pass_fail(sensor: str, pairs: list[tuple[Any, Any]], judged: list[int], ties: int,
               level: float) -> dict[str, Any]:
    judge = [j for j, _ in pairs]
    human = [h for _, h in pairs]
    a = judges.agreement(judge, human, level)
    rate = judges.corrected_rate(judged[0], judged[1], a.tp, a.tp + a.fn, a.tn, a.tn + a.fp,
                                 level)
    return {"sensor": sensor, "dimension": None, "labelled": len(pairs), "ties": ties,
            "accuracy": estimate_out(a.accuracy), "tpr": estimate_out(a.tpr),
            "tnr": estimate_out(a.tnr), "kappa": estimate_out(a.kappa),
            "judged_rate": {"passed": judged[0], "judged": judged[1],
                            "value": num(judged[0] / judged[1]) if judged[1] else None},
            "corrected_rate": {**estimate_out(rate.rate),
                               "p_uninformative": num(rate.p_uninformative),
                               "uninformative": rate.uninformative}}


def _scored(sensor: str, dimension: str, pairs: list[tuple[Any, Any]],
            level: float) -> dict[str, Any]:
    entry: dict[str, Any] = {"sensor": sensor, "dimension": dimension, "labelled": len(pairs),
                             "weighted_kappa": None, "spearman": None}
    if len(pairs) >= 2:
        s = judges.score_agreement([j for j, _ in pairs], [h for _, h in pairs], level)
        entry.update(weighted_kappa=estimate_out(s.kappa), spearman=estimate_out(s.spearman))
    return entry


def readings_of(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A trial line's readings, every sensor's (`readings`), or its one `reading` on a line
    from before the list."""
    listed = record.get("readings")
    if isinstance(listed, list) and listed:
        return [r for r in listed if isinstance(r, Mapping)]
    reading = record.get("reading")
    return [reading] if isinstance(reading, Mapping) else []


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def estimate_out(e: Estimate) -> dict[str, Any]:
    return {"value": num(e.value), "ci": [num(e.lo), num(e.hi)], "n": e.n, "method": e.method}


__all__ = ["estimate_out", "judge_agreement", "readings_of"]
