"""`ix plan`: how many cases and trials an experiment needs, with the assumptions said aloud.

Three questions, each answered by `ix.stats.power` (STATS.md §9):
- width: how many units (cases, or trials of one case) until a rate's credible interval is
  at most this wide;
- independent: how many cases per subject to detect a difference between two subjects that
  ran different cases;
- paired: how many shared cases (or, given the cases, which difference) when both subjects
  run the same cases, K trials each (Miller 2024).
Planning values can come from the latest run of an experiment instead of guesses.
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ix.domain.errors import ConfigError
from ix.lab.results import LATEST_SUMMARY


@dataclass(frozen=True)
class PlanningInputs:
    """Variances read off a previous run (per-case activation rates)."""

    source: str
    p: float
    sigma2_a: float
    sigma2_b: float
    omega2: float
    cases: int
    trials: int
    notes: tuple[str, ...]


def inputs_from_run(experiment_dir: Path) -> PlanningInputs:
    """Planning values from `results/summary-latest.json` (control, and first variant if any)."""
    path = experiment_dir / "results" / LATEST_SUMMARY
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except OSError:
        raise ConfigError("no run yet: run the experiment first, or give --p / --sigma2 "
                          "explicitly", file=path) from None
    except ValueError:
        raise ConfigError("not valid JSON", file=path) from None
    blocks = summary.get("subjects") or []
    if not blocks:
        raise ConfigError("summary has no subjects", file=path, field="subjects")
    notes: list[str] = []
    a = _scores(blocks[0])
    if not a:
        raise ConfigError("no case has a valid trial", file=path, field="probe_results")
    from ix.stats.power import paired_variances

    sigma2_a = sum(p * (1 - p) for p, _ in a.values()) / len(a)
    p = sum(p for p, _ in a.values()) / len(a)
    if len(blocks) > 1:
        b = _scores(blocks[1])
        shared = sorted(set(a) & set(b))
        if not shared:
            raise ConfigError(f"{blocks[1]['name']} has no case in common with "
                              f"{blocks[0]['name']}", file=path, field="subjects")
        sigma2_a, sigma2_b, omega2 = paired_variances(
            [a[c][0] for c in shared], [a[c][1] for c in shared],
            [b[c][0] for c in shared], [b[c][1] for c in shared])
        notes.append(f"omega2 from the per-case differences of {blocks[0]['name']} and "
                     f"{blocks[1]['name']} over {len(shared)} shared cases, less trial noise")
    else:
        sigma2_b = sigma2_a
        omega2 = 0.0
        notes.append("one subject only: the variant is assumed to vary like the control "
                     "(sigma2_b = sigma2_a) and omega2 = 0, which is optimistic; give "
                     "--omega2 to be safer")
    trials = int(summary.get("trials_per_case") or max(n for _, n in a.values()))
    return PlanningInputs(source=str(path), p=p, sigma2_a=sigma2_a, sigma2_b=sigma2_b,
                          omega2=omega2, cases=len(a), trials=trials, notes=tuple(notes))


def _scores(block: dict[str, Any]) -> dict[str, tuple[float, int]]:
    return {p["probe_id"]: (float(p["score"]), int(p["n"]))
            for p in block.get("probe_results", []) if p.get("score") is not None and p["n"]}


def plan_width(width: float, p: float = 0.5, level: float = 0.95) -> dict[str, Any]:
    from ix.stats.intervals import beta_interval
    from ix.stats.power import n_for_interval_width

    _check_rate("--p", p)
    if not 0 < width < 1:
        raise ConfigError(f"must be between 0 and 1, got {width}", field="--width")
    n = n_for_interval_width(width, p=p, level=level)
    lo, hi = beta_interval(round(p * n), n, level=level)
    return {
        "question": "width",
        "n": n,
        "achieved_interval": [lo, hi],
        "assumptions": [
            f"the rate is near {p:g} (0.5 is the worst case: the widest interval)",
            f"{level:.0%} equal-tailed credible interval, Beta(1,1) prior",
            "the n units are independent: cases with one trial each, or the trials of one "
            "case; trials nested in cases count for less (see the clustered SE)",
        ],
    }


def plan_independent(mde: float, p1: float, *, alpha: float = 0.05, power: float = 0.8,
                     method: str = "unpooled") -> dict[str, Any]:
    from ix.stats.power import sample_size_two_proportions

    _check_rate("--p1", p1)
    p2 = p1 + mde if p1 + mde <= 1 else p1 - mde
    _check_rate("--mde", p2)
    n = sample_size_two_proportions(p1, p2, alpha=alpha, power=power, method=method)
    return {
        "question": "independent",
        "n_per_subject": n,
        "assumptions": [
            f"two subjects on different cases, rates {p1:g} and {p2:g} (difference {mde:g})",
            f"two-sided alpha {alpha:g}, power {power:g}, {method} normal approximation",
            "one trial per case (more trials per case help only as far as cases vary)",
        ],
    }


def plan_paired(*, mde: float | None, cases: int | None, sigma2_a: float, sigma2_b: float,
                omega2: float, trials: int, alpha: float = 0.05,
                power: float = 0.8) -> dict[str, Any]:
    from ix.stats.power import mde_paired, n_paired

    if trials < 1:
        raise ConfigError(f"must be at least 1, got {trials}", field="--trials")
    for name, v in (("--sigma2-a", sigma2_a), ("--sigma2-b", sigma2_b), ("--omega2", omega2)):
        if v < 0:
            raise ConfigError(f"a variance cannot be negative, got {v}", field=name)
    common = dict(sigma2_a=sigma2_a, sigma2_b=sigma2_b, omega2=omega2, k_a=trials,
                  k_b=trials, alpha=alpha, power=power)
    out: dict[str, Any] = {"question": "paired", "trials_per_case": trials}
    if mde is not None:
        if not 0 < mde < 1:
            raise ConfigError(f"must be between 0 and 1, got {mde}", field="--mde")
        out["n_cases"] = n_paired(mde, **common)
        out["mde"] = mde
    if cases is not None:
        if cases < 2:
            raise ConfigError(f"must be at least 2, got {cases}", field="--cases")
        out["mde_for_cases"] = {"cases": cases, "mde": mde_paired(cases, **common)}
    out["assumptions"] = [
        f"both subjects run the same cases, {trials} trial(s) each",
        f"within-case (trial) variance sigma2_a={sigma2_a:.4g}, sigma2_b={sigma2_b:.4g}; "
        f"variance of the per-case difference of true rates omega2={omega2:.4g}",
        f"two-sided alpha {alpha:g}, power {power:g}; Miller (2024) paired-difference formula",
    ]
    return out


def _check_rate(field: str, p: float) -> None:
    if not 0 <= p <= 1:
        raise ConfigError(f"a rate must be between 0 and 1, got {p}", field=field)


def plan_power(lab: str | Path | None = None, experiment: str | None = None, *,
               width: float | None = None, mde: float | None = None, paired: bool = False,
               p: float | None = None, trials: int | None = None, cases: int | None = None,
               sigma2_a: float | None = None, sigma2_b: float | None = None,
               omega2: float | None = None, alpha: float = 0.05, power: float = 0.8,
               level: float = 0.95, method: str = "unpooled") -> dict[str, Any]:
    """What `ix plan` answers, as data: `{"answers": [...], "from_run" | "from_design": ...}`.

    With `experiment`, the planning values come from its latest run; before its first run,
    from its design (its cases and trials, rate 0.5, omega2 = 0), said so in `from_design`.
    With `experiment` and neither `width` nor `mde`: what the current design can detect.
    """
    from ix.api.experiments import resolve, validate

    for name, value in (("--alpha", alpha), ("--power", power), ("--level", level)):
        if not 0 < value < 1:
            raise ConfigError(f"must be between 0 and 1, got {value}", field=name)
    if method not in ("unpooled", "pooled", "cohen_h"):
        raise ConfigError(f"unknown method {method!r}; allowed: unpooled, pooled, cohen_h",
                          field="--method")
    inputs: PlanningInputs | None = None
    design: dict[str, Any] | None = None
    if experiment is not None:
        lab_path, paths = resolve(lab, [experiment])
        if (paths[0] / "results" / LATEST_SUMMARY).is_file():
            inputs = inputs_from_run(paths[0])
        else:
            planned = validate(lab_path, [str(paths[0])])[0]
            rate = p if p is not None else 0.5
            inputs = PlanningInputs(
                source=str(planned.loaded.config_file), p=rate, sigma2_a=rate * (1 - rate),
                sigma2_b=rate * (1 - rate), omega2=0.0, cases=len(planned.cases),
                trials=planned.trials, notes=("no run yet: the design's cases and trials, a "
                                              f"rate of {rate:g} and omega2 = 0 (optimistic)",))
            design = {"experiment": planned.loaded.experiment.name, "cases": inputs.cases,
                      "trials": inputs.trials, "notes": list(inputs.notes)}
    rate = p if p is not None else (inputs.p if inputs else 0.5)
    answers: list[dict[str, Any]] = []
    if width is not None:
        answers.append(plan_width(width, rate, level))
    if mde is not None and not paired:
        answers.append(plan_independent(mde, rate, alpha=alpha, power=power, method=method))
    if paired or (inputs is not None and width is None and mde is None):
        k = trials if trials is not None else (inputs.trials if inputs else 1)
        s2a = sigma2_a if sigma2_a is not None else (
            inputs.sigma2_a if inputs else rate * (1 - rate))
        s2b = sigma2_b if sigma2_b is not None else (inputs.sigma2_b if inputs else s2a)
        w2 = omega2 if omega2 is not None else (inputs.omega2 if inputs else 0.0)
        n_cases = cases if cases is not None else (inputs.cases if inputs else None)
        if mde is None and n_cases is None:
            raise ConfigError("say what to plan for the paired design: --mde (how many "
                              "cases) or --cases (which difference)", field="--paired")
        answers.append(plan_paired(mde=mde, cases=n_cases, sigma2_a=s2a, sigma2_b=s2b,
                                   omega2=w2, trials=k, alpha=alpha, power=power))
    if not answers:
        raise ConfigError("say what to plan: --width W (interval width), --mde D (difference "
                          "between subjects), optionally --paired", field="ix plan")
    result: dict[str, Any] = {"answers": answers}
    if design is not None:
        result["from_design"] = design
    elif inputs is not None:
        result["from_run"] = {"summary": inputs.source, "p": inputs.p,
                              "sigma2_a": inputs.sigma2_a, "sigma2_b": inputs.sigma2_b,
                              "omega2": inputs.omega2, "cases": inputs.cases,
                              "trials": inputs.trials, "notes": list(inputs.notes)}
    return result
