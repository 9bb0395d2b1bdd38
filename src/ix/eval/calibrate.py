"""How far a proxy subject stands in for the real one (`ix calibrate`, docs/subjects.md
"Proxy subjects"): the statistics of one calibration run, read from its summary.

Both subjects ran the same cases with the same trial seeds (common random numbers), so the
case is the unit. A case's *verdict* is its majority vote (the share of its valid trials whose
reading passed above ½, as `ix optimize` counts a case as fired); a case's *rate* is that
share. The proxy's verdicts are read against the subject's as a judge's against people's
(`ix.stats.judges.agreement`: sensitivity = TPR, specificity = TNR, Cohen's κ), the rates by
Spearman's ρ (`score_agreement`), and the candidates' order by Kendall's τ-b
(`rank_agreement`) of each candidate's mean right rate: the rate on a case that should pass
(must_trigger, or a capability case), 1 − the rate on a should_not_trigger case.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from ix.eval.judge_agreement import estimate_out
from ix.eval.numbers import LEVEL, num
from ix.stats import judges

__all__ = ["MIN_KAPPA", "MIN_KAPPA_LOW", "agreement_of", "case_rates", "ranking_of", "verdict"]

#: Good enough to screen: κ at least this (Landis & Koch's "substantial") ...
MIN_KAPPA = 0.6
#: ... and the low end of its 95% interval at least this (agreement beyond chance still
#: "fair" at worst): on 20 cases whose subject verdicts split 10/10, a proxy that agrees on
#: 18 (κ 0.80 [0.38, 0.93]) passes, one that agrees on 16 (κ 0.60 [0.16, 0.83]) does not.
MIN_KAPPA_LOW = 0.3


def case_rates(block: Mapping[str, Any]) -> dict[str, tuple[str, float]]:
    """A subject block's cases with a valid trial: probe id -> (expectation, rate)."""
    out = {}
    for p in block.get("probe_results") or []:
        valid = int(p.get("n") or 0)
        if valid > 0 and p.get("score") is not None:
            out[str(p["probe_id"])] = (str(p.get("expectation")), float(p["score"]))
    return out


def _right(expectation: str, rate: float) -> float:
    return 1.0 - rate if expectation == "should_not_trigger" else rate


def agreement_of(subject: Mapping[str, Any], proxy: Mapping[str, Any],
                 level: float = LEVEL) -> dict[str, Any]:
    """The proxy's case verdicts and rates against the subject's, on the cases both have a
    valid trial of; each case as a row (`cases`)."""
    mine, theirs = case_rates(subject), case_rates(proxy)
    ids = [i for i in mine if i in theirs]
    rows = [{"probe_id": i, "expectation": mine[i][0], "subject_rate": num(mine[i][1]),
             "proxy_rate": num(theirs[i][1]), "subject_verdict": mine[i][1] > 0.5,
             "proxy_verdict": theirs[i][1] > 0.5} for i in ids]
    a = judges.agreement([r["proxy_verdict"] for r in rows],
                         [r["subject_verdict"] for r in rows], level)
    rho = None
    if len(rows) >= 2:
        rho = estimate_out(judges.score_agreement([theirs[i][1] for i in ids],
                                                  [mine[i][1] for i in ids], level).spearman)
    return {"compared": len(rows), "agreed": a.tp + a.tn, "tp": a.tp, "fn": a.fn, "fp": a.fp,
            "tn": a.tn, "accuracy": estimate_out(a.accuracy),
            "sensitivity": estimate_out(a.tpr), "specificity": estimate_out(a.tnr),
            "kappa": estimate_out(a.kappa), "rate_correlation": rho, "cases": rows}


def ranking_of(pairs: Sequence[tuple[str, Mapping[str, Any], Mapping[str, Any]]],
               level: float = LEVEL) -> dict[str, Any]:
    """Kendall's τ-b between the order the subject and the proxy give the candidates
    (`pairs`: name, the subject's block, the proxy's block), over the cases every block has
    a valid trial of; fewer than `judges.MIN_RANKED` candidates: "not enough candidates"."""
    rates = [(name, case_rates(s), case_rates(p)) for name, s, p in pairs]
    ids = [i for i in (rates[0][1] if rates else {})
           if all(i in s and i in p for _, s, p in rates)]
    subject = [[_right(*s[i]) for i in ids] for _, s, _ in rates]
    proxy = [[_right(*p[i]) for i in ids] for _, _, p in rates]
    candidates = [{"name": name, "subject": num(sum(row) / len(row)) if row else None,
                   "proxy": num(sum(other) / len(other)) if other else None}
                  for (name, _, _), row, other in zip(rates, subject, proxy, strict=True)]
    tau = judges.rank_agreement(subject, proxy, level) if rates else None
    note = None
    if len(rates) < judges.MIN_RANKED:
        note = (f"not enough candidates: {len(rates)} (Kendall's tau needs at least "
                f"{judges.MIN_RANKED})")
    return {"candidates": candidates, "cases": len(ids),
            "tau": None if note or tau is None else estimate_out(tau), "note": note}


def verdict(subject: str, proxy: str, agreement: Mapping[str, Any],
            ranking: Mapping[str, Any]) -> tuple[bool | None, str]:
    """The answer in one line, and whether the proxy is good enough to screen (None: the
    subject's verdicts are all one class, so agreement cannot be told from chance)."""
    kappa = agreement["kappa"]
    lo = kappa["ci"][0]
    head = (f"{proxy} agrees with {subject} on {agreement['agreed']}/{agreement['compared']} "
            "cases")
    if kappa["value"] is None:
        return None, (f"{head}, kappa n/a: {subject}'s verdicts are all one class; "
                      "calibrate on more cases (--n) or other ones")
    good = kappa["value"] >= MIN_KAPPA and lo is not None and lo >= MIN_KAPPA_LOW
    said = f"{head}, kappa {kappa['value']:.2f} [{_end(lo)}, {_end(kappa['ci'][1])}]"
    tau = ranking.get("tau")
    if good and tau is not None and tau["value"] is not None and tau["value"] <= 0:
        return False, (f"{said}, but ranks the candidates otherwise (tau "
                       f"{tau['value']:.2f}): not good enough to screen candidates")
    return good, f"{said}: {'good enough' if good else 'not good enough'} to screen"


def _end(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"
