"""The pairwise judge's lines (the summary's `pairwise` block, `ix.eval.pairwise`), one per
variant, on `ix run`'s screen and in `ix report`: words a terminal wraps, never cuts."""

from collections.abc import Mapping
from typing import Any

from rich.console import RenderableType
from rich.text import Text

from ix.report.answer import interval_text, num_text


def pairwise_lines(block: Mapping[str, Any] | None) -> list[str]:
    """`pairwise (blind, both orders): B wins 0.72 [0.61, 0.83] of cases vs control A ·
    P(better) 0.990 · position bias +0.04 [-0.03, +0.11]`, a line per variant."""
    if not block:
        return []
    how = "both orders" if block.get("swap") else "seeded order"
    lines = []
    for v in block.get("variants") or []:
        share = v["win_share"]
        line = (f"pairwise (blind, {how}): {v['variant']} wins {num_text(share['value'], 2)} "
                f"{interval_text(share['ci'])} of {v['cases']} cases vs control {v['control']}"
                f" · P(better) {num_text(v['p_better'])}")
        bias = v.get("position_bias")
        if bias:
            lo, hi = bias["ci"]
            ends = "n/a" if lo is None or hi is None else \
                f"{num_text(lo, 2, sign=True)}, {num_text(hi, 2, sign=True)}"
            line += f" · position bias {num_text(bias['value'], 2, sign=True)} [{ends}]"
        if v.get("errors"):
            line += f" · {v['errors']} judgement(s) errored"
        lines.append(line)
    return lines


def pairwise_parts(block: Mapping[str, Any] | None) -> list[RenderableType]:
    """The lines as one block for a screen, a blank line above."""
    lines = pairwise_lines(block)
    return [Text(""), Text("\n".join(lines))] if lines else []
