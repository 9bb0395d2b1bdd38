"""Per-case gates (issue 38, docs/running.md "Per-case gates"): every case of a side must
clear a threshold, not only the average — `case:recall.lower>=0.8` asks that each
must_trigger case's credible interval lies at or above 0.8.

    case:<metric>.<bound><op><threshold>[,holm]

- metric: `recall` (must_trigger cases: the case's rate), `specificity` (should_not_trigger
  cases: 1 − the rate), `correct` (every case: the share of its trials whose outcome is
  right);
- bound: `lower` / `upper` (the case's credible interval at the summary's level) or `value`
  (its point estimate);
- op: `>=`, `>`, `<=`, `<`.

Unadjusted (the default, labelled "per case, unadjusted"), a case clears the gate when its
bound does. With `,holm`, the cases are tested together: each case's posterior probability
of lying on the wrong side of the threshold (Beta(k + a, n − k + b) at the summary's prior)
is its p, Holm's step-down at the interval's one-sided α = (1 − level)/2 decides which cases
clear it, so the chance that any case wrongly clears it stays at α. A case without a valid
trial never clears a gate. Each gate is checked for every subject of the run.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from ix.domain.errors import ConfigError
from ix.eval.numbers import num
from ix.stats.beta import beta_cdf

if TYPE_CHECKING:
    from ix.eval.schemas import GateOut

Metric = Literal["recall", "specificity", "correct"]
_GATE = re.compile(r"^case:(recall|specificity|correct)\.(lower|upper|value)"
                   r"\s*(>=|<=|>|<)\s*([0-9]*\.?[0-9]+)\s*(,\s*holm)?$")
_SIDES = {"recall": ("must_trigger",), "specificity": ("should_not_trigger",),
          "correct": ("must_trigger", "should_not_trigger")}
PRIORS = {"uniform": (1.0, 1.0), "jeffreys": (0.5, 0.5)}


@dataclass(frozen=True)
class CaseGate:
    text: str
    metric: Metric
    bound: Literal["lower", "upper", "value"]
    op: str
    threshold: float
    holm: bool

    @property
    def label(self) -> str:
        return "Holm across the cases" if self.holm else "per case, unadjusted"


def parse_gate(text: str, field: str) -> CaseGate:
    """`case:recall.lower>=0.8` (`,holm` for Holm's adjustment); a `ConfigError` naming
    `field` for anything else."""
    m = _GATE.match(text.strip())
    if m is None:
        raise ConfigError(f"{text!r} is not a per-case gate; write case:<recall|specificity|"
                          "correct>.<lower|upper|value><>=|>|<=|<><threshold>[,holm], e.g. "
                          "case:recall.lower>=0.8", field=field)
    metric, bound, op, value, holm = m.groups()
    threshold = float(value)
    if not 0 <= threshold <= 1:
        raise ConfigError(f"{text!r}: the threshold is a rate in [0, 1]", field=field)
    if holm and bound == "value":
        raise ConfigError(f"{text!r}: Holm's adjustment is for an interval's bound "
                          "(lower or upper), not the value", field=field)
    return CaseGate(text.strip(), metric, bound, op, threshold, bool(holm))  # type: ignore[arg-type]


def gates_block(gates: Sequence[CaseGate], subjects: Sequence[Mapping[str, Any]],
                level: float, prior: str = "uniform") -> "list[GateOut]":
    """The summary's `gates`: each gate for each subject, whether it held, and the cases
    that did not clear it (value, interval, and Holm's adjusted p when adjusted)."""
    a, b = PRIORS.get(prior, PRIORS["uniform"])
    out: list[GateOut] = []
    for gate in gates:
        for block in subjects:
            cases = [_case(gate.metric, p) for p in block.get("probe_results") or ()
                     if p.get("expectation") in _SIDES[gate.metric]]
            failed = (_holm(gate, cases, level, a, b) if gate.holm
                      else [c for c in cases if not _clears(gate, c)])
            out.append(cast("GateOut", {
                "gate": gate.text, "label": gate.label, "subject": block["name"],
                "cases": len(cases), "passed": not failed,
                "failed": [{"probe_id": c["probe_id"], "value": num(c["value"]),
                            "ci": [num(x) for x in c["ci"]] if c["ci"] else None,
                            **({"p": num(c["p"])} if "p" in c else {})} for c in failed]}))
    return out


def _case(metric: str, p: Mapping[str, Any]) -> dict[str, Any]:
    """A case's rate on the gate's metric: its value, interval and counts (k of n)."""
    n, k = int(p.get("n") or 0), int(p.get("passed") or 0)
    value, ci = p.get("score"), p.get("score_ci")
    flip = metric == "specificity" or (metric == "correct"
                                       and p.get("expectation") == "should_not_trigger")
    if flip and value is not None:
        value, k = 1.0 - value, n - k
        ci = [1.0 - ci[1], 1.0 - ci[0]] if ci else ci
    return {"probe_id": p["probe_id"], "value": value if n else None,
            "ci": list(ci) if ci and n else None, "k": k, "n": n}


def _holds(x: float, op: str, threshold: float) -> bool:
    return {">=": x >= threshold, ">": x > threshold, "<=": x <= threshold,
            "<": x < threshold}[op]


def _clears(gate: CaseGate, case: Mapping[str, Any]) -> bool:
    if case["value"] is None:
        return False
    x = case["value"] if gate.bound == "value" else \
        case["ci"][0 if gate.bound == "lower" else 1]
    return x is not None and _holds(float(x), gate.op, gate.threshold)


def _holm(gate: CaseGate, cases: list[dict[str, Any]], level: float, a: float,
          b: float) -> list[dict[str, Any]]:
    """The cases Holm's step-down does not clear: p = the posterior probability of the
    wrong side of the threshold, α = (1 − level)/2; each failed case with its adjusted p."""
    alpha = (1 - level) / 2
    above = gate.op in (">=", ">")
    for c in cases:
        if not c["n"]:
            c["p"] = 1.0
            continue
        below = beta_cdf(gate.threshold, c["k"] + a, c["n"] - c["k"] + b)
        c["p"] = below if above else 1.0 - below
    ranked = sorted(cases, key=lambda c: c["p"])
    m, adjusted, failed, stopped = len(ranked), 0.0, [], False
    for j, c in enumerate(ranked):
        adjusted = max(adjusted, min(1.0, (m - j) * c["p"]))
        stopped = stopped or not c["p"] <= alpha / (m - j)
        if stopped:
            failed.append({**c, "p": adjusted})
    return sorted(failed, key=lambda c: c["probe_id"])


__all__ = ["CaseGate", "gates_block", "parse_gate"]
