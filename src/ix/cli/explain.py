"""`ix results --explain CASE`: per trial, which skill won the routing, its score against the
threshold and the words that carried it — as text that reads at 80 columns, or as JSON."""

import textwrap
from collections.abc import Iterator
from typing import Any

from rich.text import Text

from ix.api.routing import Explained, routing_summary
from ix.cli.output import err, out, print_json

#: Lines are wrapped to this width (a pipe has no width), never inside an item.
WIDTH = 80
_NBSP = "\u00a0"  # joins the parts of one item so that a wrap never splits it


def print_explained(found: Explained, case: str, fmt: str) -> None:
    """The trials' routing decisions; a plain sentence when none recorded one (exit 0)."""
    if fmt == "json":
        print_json({"case": case, "trials": found.trials, "total": found.total,
                    "recorded": found.recorded,
                    "scope": found.scope.describe() if found.scope else None})
        return
    if not found.trials:
        out.print(Text(f"no trial of case {case} in scope"))
    elif not found.recorded:
        n = len(found.trials)
        out.print(Text(f"{n} trial{'' if n == 1 else 's'} of {case}: no routing detail "
                       "recorded; only the lexical runtime records one (its scores, "
                       "threshold and matched words)."))
    else:
        for line in explain_lines(found.trials):
            out.print(Text(line), soft_wrap=True)
    note = f"{len(found.trials)} of {found.total} trial(s)"
    if len(found.trials) < found.total:
        note += " shown (--limit 0 for all)"
    err.print(Text(note, style="dim"))
    if found.scope:
        err.print(Text(found.scope.describe(), style="dim"))


def explain_lines(trials: list[dict[str, Any]]) -> Iterator[str]:
    """A heading per (experiment, run, subject, case), then each trial: its reading and
    outcome, the decision, then one line per skill scored with the stems that carried its
    score (said once while the scores stay the same, as they do for one prompt)."""
    heading = None
    shown: tuple[Any, int] | None = None  # the skills last listed, and of which trial
    for t in trials:
        this = (t["experiment"], t["run_id"], t["subject"], t["case"])
        if this != heading:
            if heading is not None:
                yield ""
            heading, shown = this, None
            yield from _wrap([t["case"], f"({t['expectation']})", "·", t["subject"], "·",
                              "run", t["run_id"], "·", t["experiment"]])
        skills = (t["routing"] or {}).get("skills")
        same = shown is not None and skills is not None and shown[0] == skills
        yield from _trial(t, same_as=shown[1] if same and shown else None)
        if skills is not None and not same:
            shown = (skills, t["trial"])


def _trial(t: dict[str, Any], same_as: int | None) -> Iterator[str]:
    head = f"trial {t['trial']}" + (f" (attempt {t['attempt']})" if t["attempt"] else "")
    if t["error"] is not None:
        yield from _wrap([f"{head}:", f"error: {t['error']}"], 2, 4)
        return
    verdict = f"{t['reading'] or '-'}, {t['outcome'] or 'n/a'}"
    routing = t["routing"]
    if routing is None:
        yield from _wrap([f"{head}:", f"{verdict};", "no routing detail recorded"], 2, 4)
        return
    s = routing_summary(routing)
    threshold = _num(s["threshold"])
    if s["chosen"] is not None:
        score = _num(s["score"])
        side = ">" if (s["score"] or 0) > (s["threshold"] or 0) else "<="
        why = [f"chose {s['chosen']}", f"(score {score} {side} threshold {threshold})"]
    elif s["best"] is not None:
        best = s["best"]
        why = ["chose no skill", f"(best {best['skill']} {_num(best['score'])}",
               f"vs threshold {threshold})"]
    else:
        why = ["chose no skill", f"(no skill matched a word; threshold {threshold})"]
    if routing.get("temperature"):
        why[-1] += ","
        why.append(f"sampled at temperature {_num(routing['temperature'])}")
    yield from _wrap([f"{head}:", f"{verdict} —", *why], 2, 4)
    if same_as is not None:
        yield from _wrap([f"scores as trial {same_as}"], 4, 8)
        return
    for skill in routing.get("skills") or []:
        terms = [f"{term['term']} {_num(term['share'])}"
                 + (f" ({', '.join(term['words'])})" if term.get("words") != [term["term"]]
                    else "") for term in skill.get("terms") or []]
        mark = "*" if skill["skill"] == s["chosen"] else "-"
        yield from _wrap([f"{mark} {skill['skill']} {_num(skill['score'])}:",
                          *(f"{x}," for x in terms[:-1]), *terms[-1:]], 4, 8)


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.2f}"


def _wrap(items: list[str], first: int = 0, rest: int = 2) -> list[str]:
    """The items as lines of at most `WIDTH` columns (the first indented by `first`, the
    others by `rest`), breaking only between items; one longer than a line stands whole."""
    text = " ".join(item.replace(" ", _NBSP) for item in items)
    lines = textwrap.wrap(text, width=WIDTH, initial_indent=" " * first,
                          subsequent_indent=" " * rest, break_long_words=False,
                          break_on_hyphens=False) or [""]
    return [line.replace(_NBSP, " ") for line in lines]
