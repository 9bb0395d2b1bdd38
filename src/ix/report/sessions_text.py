"""A longitudinal study in words (`ix report --sessions`, ix.eval.sessions): the answer first
(sessions done, when the next is due), then each subject's trend, then the sessions."""

from collections.abc import Mapping
from typing import Any

__all__ = ["lab_goal_lines", "sessions_lines"]


def _when(iso: str) -> str:
    return iso.replace("T", " ").removesuffix("Z")[:16] + " UTC"


def _slope(row: Mapping[str, Any], unit: str) -> str:
    if row.get("slope") is None:
        return f"{row['subject']}: {row.get('note', 'no trend')}"
    lo, hi = row["slope_ci"]
    return (f"{row['subject']}: {row['slope']:+.3f} per {unit} [{lo:+.3f}, {hi:+.3f}], "
            f"P(decline) {row['p_decline']:.2f}, {row['n_cases']} cases")


def sessions_lines(block: Mapping[str, Any]) -> list[str]:
    """`e: 3 of 8 sessions done (every 1w); next due 2026-12-07 12:41 UTC (due now)`, the
    trend per subject with its interval, and one line per session with each subject's rate."""
    head = (f"{block['experiment']}: {block['done']} of {block['count']} sessions done "
            f"(every {block['every']})")
    if block["complete"]:
        head += "; the study is complete"
    elif block["next_due"] is not None:
        head += f"; next due {_when(block['next_due'])}" + (" (due now)" if block["due"]
                                                             else "")
    level = round(100 * float(block["level"]))
    lines = [head, f"trend of the {block['metric'].replace('_', ' ')} per {block['unit']} "
                   f"({level}% interval, cases as the unit):"]
    lines += [f"  {_slope(row, block['unit'])}" for row in block["trend"]]
    versus = block.get("versus_control") or []
    if versus:
        lines.append(f"the difference from {versus[0]['control']}, its change per "
                     f"{block['unit']} (cases paired; Holm p):")
    for v in versus:
        if v["diff"] is None:
            lines.append(f"  {v['subject']}: {v.get('note', 'not compared')}")
            continue
        lo, hi = v["diff_ci"]
        lines.append(f"  {v['subject']}: {v['diff']:+.3f} per {block['unit']} "
                     f"[{lo:+.3f}, {hi:+.3f}], p {v['p_value_holm']:.3f}, "
                     f"{v['n_cases']} cases")
    if block["sessions"]:
        lines.append("sessions:")
    for i, s in enumerate(block["sessions"]):
        rates = "  ".join(
            f"{row['subject']} " + ("n/a" if i >= len(row["rates"]) or row["rates"][i] is None
                                    else f"{row['rates'][i]:.2f}")
            for row in block["trend"] if i < row["sessions"])
        lines.append(f"  {s['index']}  {_when(s['started_at'])}  {rates}")
    return lines


def lab_goal_lines(block: Mapping[str, Any]) -> list[str]:
    """A lab goal (`ix report --goal NAME`): the verdict and pooled difference first, then
    each experiment's own difference."""
    e = block["effect"]
    head = f"{block['name']}: {block['verdict']}"
    if e["diff"] is not None:
        lo, hi = e["diff_ci"]
        head += (f" — {block['metric']} {block['compare'][1]} − {block['compare'][0]} "
                 f"{e['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] over {e['n_cases']} cases of "
                 f"{len(block['experiments'])} experiments")
    lines = [head, f"  {block['hypothesis']}"]
    if block.get("p_supported") is not None:
        lines.append(f"  P(supported) {block['p_supported']:.3f}, P(refuted) "
                     f"{block['p_refuted']:.3f} ({block['rule']})")
    if block.get("note"):
        lines.append(f"  {block['note']}")
    lines.append("each experiment (its latest completed run):")
    for x in block["experiments"]:
        if x.get("diff") is None:
            lines.append(f"  {x['experiment']}: {x.get('note') or 'nothing to compare'}")
            continue
        lo, hi = x["diff_ci"]
        lines.append(f"  {x['experiment']}: {x['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}], "
                     f"{x['n_cases']} cases, run {x['run_id']}")
    return lines
