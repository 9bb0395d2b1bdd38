"""A failed per-case gate in words (the summary's `gates`, `ix.eval.case_gates`), for
`ix run`'s stderr and the first screen of `ix report`."""

from collections.abc import Mapping, Sequence
from typing import Any


def gate_lines(block: Sequence[Mapping[str, Any]], limit: int = 8) -> list[str]:
    """A failed gate in words: `case:recall.lower>=0.8 (per case, unadjusted): with-skill:
    3 of 12 cases below: must-003 0.40 [0.12, 0.77], …`."""
    out = []
    for g in block:
        if g["passed"]:
            continue
        shown = ", ".join(f"{c['probe_id']} " + ("no valid trial" if c["value"] is None else
                          f"{c['value']:.2f}" + (f" [{c['ci'][0]:.2f}, {c['ci'][1]:.2f}]"
                                                 if c["ci"] else ""))
                          for c in g["failed"][:limit])
        more = f", and {len(g['failed']) - limit} more" if len(g["failed"]) > limit else ""
        out.append(f"{g['gate']} ({g['label']}): {g['subject']}: {len(g['failed'])} of "
                   f"{g['cases']} cases did not clear it: {shown}{more}")
    return out


__all__ = ["gate_lines"]
