"""Reports of an `ix optimize` session: Markdown and HTML (the terminal's is
`ix.report.optimize_terminal`).

All three show the same things in the same order, the answer first: the verdict (and what
happened to the skill), the holdout comparison per subject, the rounds (each candidate's
train F1), the description before and after with a word diff, then the split, proposer, cost
and files. `state` is a session's `optimize.json` (`ix.engine.optimize`); what a session that
is still running or was stopped has not filled in yet (None) is shown as missing, never fails.
`outline(state)` is what the three share; each renderer only formats it.

Safety as in the run's reports: on a terminal every lab string is a `Text` (never markup),
in Markdown it goes through `md_text`/`md_code`, in HTML jinja2 autoescapes it.
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from ix._lazy import lazy
from ix.report.html import CSP, REPORT_CSS
from ix.report.markdown import md_code, md_text
from ix.report.terminal import fmt
from ix.store.layout import ExperimentDir

if TYPE_CHECKING:
    import jinja2
else:  # imported when a page is rendered
    jinja2 = lazy("jinja2")

__all__ = ["OPTIMIZE_CSS", "PAIRS", "Outline", "Part", "optimize_body_html", "optimize_html",
           "optimize_markdown", "outline", "rule", "screening_line", "verdict_line",
           "word_diff"]

#: The session page's own rules (scoped to `.ix-report`), inlined after `REPORT_CSS`.
OPTIMIZE_CSS: str = resources.files("ix.report").joinpath("templates/optimize.css").read_text(
    encoding="utf-8")
#: A piece of a sentence: ("text" | "code", value); code is a path or a command.
Part = tuple[str, str]
_ORIGINAL = "original"
PAIRS = ("both fired", "original only", "candidate only", "neither")
_EXPECTATIONS = ("must_trigger", "should_not_trigger")
_SIDED = {"two": "95%, equal-tailed",
          "lower": "95%, one-sided: the difference lies below the equal-tailed interval",
          "upper": "95%, one-sided: the difference lies above the equal-tailed interval"}


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """`new` against `old` word by word: runs of ("same" | "del" | "ins", words), in reading
    order (a replaced run is its deletion, then its insertion); whitespace becomes one space."""
    a, b = old.split(), new.split()
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("same", " ".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("del", " ".join(a[i1:i2])))
        if j2 > j1:
            out.append(("ins", " ".join(b[j1:j2])))
    return out


# --------------------------------------------------------------------------- the outline

@dataclass(frozen=True)
class Outline:
    """What every report of a session shows, in the order it shows it."""

    kind: str                        # recommended | not-recommended | no-candidate | unfinished
    verdict: str                     # the one line of the answer
    notes: list[list[Part]]          # what happened to the skill, what to do next
    head: str                        # session, experiment, skill, status
    holdout_note: str                # what the holdout section holds (or why nothing)
    holdout: list[dict[str, Any]]    # per subject: formatted numbers and the paired counts
    candidate: str | None            # the candidate judged on the holdout cases
    rounds_note: str
    subjects: list[str]              # the subjects that have the skill (F1 per subject)
    rows: list[dict[str, Any]]       # one per candidate, round 0 = the original
    rejected: list[dict[str, Any]]   # {round, text, reason}
    rationales: list[tuple[int, str]]  # (round, why the proposer proposed what it did)
    stopped_early: str | None
    original: str
    best: str | None                 # the best description, when it is not the original
    best_label: str                  # what the best is; without one, why there is none
    diff: list[tuple[str, str]]
    facts: list[tuple[str, str]]     # (label, value): split, proposer, settings, cost, times
    files: list[tuple[str, str]]     # (label, path): session folder, SKILL.md files


def _iv(pair: Any) -> str:
    if not isinstance(pair, list | tuple) or len(pair) != 2 or None in pair:
        return "[n/a]"
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def _f1(m: Mapping[str, Any] | None) -> str:
    return "n/a" if not m else f"{fmt(m.get('f1'))} {_iv(m.get('f1_ci'))}"


def _counts(m: Mapping[str, Any] | None) -> str:
    return "n/a" if not m else "/".join(str(m.get(k, "?")) for k in ("tp", "fp", "fn", "tn"))


def _candidates(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [c for r in state.get("rounds") or [] for c in r.get("candidates") or []]


def _description(state: Mapping[str, Any], cid: str | None) -> str | None:
    if cid is None or cid == _ORIGINAL:
        return None
    return next((c["description"] for c in _candidates(state) if c["id"] == cid), None)


def verdict_line(state: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, line): the session's answer in one line, as every report starts with it."""
    status = state.get("status")
    holdout = state.get("holdout")
    if status != "completed" or holdout is None:
        reason = state.get("reason") or ("not finished yet" if status == "running"
                                         else "no reason recorded")
        return "unfinished", f"{status or 'unknown'}: {reason}"
    if holdout.get("verdict") == "no candidate" or state.get("best") in (None, _ORIGINAL):
        return "no-candidate", "no candidate beat the original on the train cases"
    credibility = (state.get("settings") or {}).get("credibility")
    if holdout.get("verdict") == "recommended" or state.get("recommended"):
        said = str(holdout.get("why") or f"P(holdout F1 better) = "
                   f"{fmt(holdout.get('prob_better'))} ≥ {credibility}")
        return "recommended", f"recommended: {holdout.get('candidate')} — {said}"
    why = str(holdout.get("why") or f"P(holdout F1 better) = "
              f"{fmt(holdout.get('prob_better'))} < {credibility}")
    return "not-recommended", (why if why.startswith("no credible improvement")
                               else f"no credible improvement: {why}")


def screening_line(state: Mapping[str, Any]) -> str | None:
    """The real calls `--screen-with` spent and saved, in one line; None unscreened."""
    sc = state.get("screening")
    if not sc:
        return None
    real, saved = int(sc.get("real_trials") or 0), int(sc.get("saved_trials") or 0)
    ranked = sum(len((r.get("screen") or {}).get("ranking") or [])
                 for r in state.get("rounds") or [])
    final = sum(len((r.get("screen") or {}).get("finalists") or [])
                for r in state.get("rounds") or [])
    share = f" ({saved / (real + saved):.0%} of {real + saved})" if real + saved else ""
    return (f"screened with {sc.get('name')}: {final} of {ranked} candidate(s) ran on the real "
            f"subject; {real} real call(s) spent, {saved} saved{share}, "
            f"{sc.get('proxy_trials')} on the proxy")


def _notes(state: Mapping[str, Any], kind: str) -> list[list[Part]]:
    screened = screening_line(state)
    notes = _skill_notes(state, kind)
    return notes if screened is None else [*notes, [("text", screened)]]


def _skill_notes(state: Mapping[str, Any], kind: str) -> list[list[Part]]:
    command = state.get("command")
    skill_file = str(state.get("skill_file") or "the skill's SKILL.md")
    if kind == "unfinished":
        again = [("text", "run the same command again to continue it")]
        if command:
            again += [("text", ": "), ("code", shlex.join(command))]
        if state.get("status") == "running":
            return [[("text", "if no ix optimize is running now, it was stopped before it "
                              "could say so: "), *again]]
        return [again]
    applied = state.get("applied")
    if applied:
        return [[("text", "applied: "), ("code", str(applied.get("file") or skill_file)),
                 ("text", " now has the recommended description; the old file is kept as "),
                 ("code", str(applied.get("backup")))]]
    if kind == "recommended":
        if command:
            apply = [*command, "--apply"] if "--apply" not in command else list(command)
            return [[("text", "the skill is unchanged: "), ("code", shlex.join(apply)),
                     ("text", " writes it into "), ("code", skill_file)]]
        return [[("text", "the skill is unchanged: the same command with "),
                 ("code", "--apply"), ("text", " writes it into "), ("code", skill_file)]]
    if kind == "no-candidate":
        return [[("text", "nothing was judged on the held-out cases; the skill is "
                          "unchanged")]]
    return [[("text", "the skill is unchanged")]]


def _holdout(state: Mapping[str, Any], kind: str) -> tuple[str, list[dict[str, Any]]]:
    n = len((state.get("split") or {}).get("holdout") or [])
    holdout = state.get("holdout") or {}
    cid = holdout.get("candidate")
    if not holdout.get("subjects"):
        if kind == "no-candidate":
            return (f"no holdout run: no candidate beat the original on the train cases, so "
                    f"the {n} held-out cases were not used"), []
        return f"not run yet: {n} cases are held out, never shown to the proposer", []
    out = []
    for s in holdout["subjects"]:
        pairs = s.get("pairs") or {}
        mc = s.get("mc_error")
        sided = s.get("difference_sided") or "two"
        p_value, improved, worsened = s.get("p_value"), s.get("improved"), s.get("worsened")
        out.append({
            "subject": s.get("subject"),
            "exact": (None if p_value is None else
                      f"exact paired p = {fmt(p_value)} ({improved} held-out case(s) improved, "
                      f"{worsened} worsened)"),
            "failed": [str(x) for x in s.get("failed") or []],
            "rows": [("F1 [95% CI]", _f1(s.get("original")), _f1(s.get("candidate"))),
                     ("precision", fmt((s.get("original") or {}).get("precision")),
                      fmt((s.get("candidate") or {}).get("precision"))),
                     ("recall", fmt((s.get("original") or {}).get("recall")),
                      fmt((s.get("candidate") or {}).get("recall"))),
                     ("TP/FP/FN/TN", _counts(s.get("original")), _counts(s.get("candidate")))],
            "difference": ("n/a" if s.get("difference") is None else
                           f"{s['difference']:+.3f} {_iv(s.get('difference_ci'))}"),
            "sided": _SIDED.get(sided, sided),
            "prob_better": fmt(s.get("prob_better")),
            "mc_error": None if mc is None else fmt(mc),
            "pairs": [(name, [int(x) for x in pairs.get(key) or [0, 0, 0, 0]])
                      for key, name in zip(("must", "not"), _EXPECTATIONS, strict=True)],
            "cases": sum(int(x) for key in ("must", "not") for x in pairs.get(key) or [])})
    return (f"{cid} against the original on {n} held-out cases, which never reached the "
            "proposer (majority vote per case, compared case by case); "
            f"{rule(state.get('settings') or {})}"), out


def rule(settings: Mapping[str, Any]) -> str:
    """When a session recommends its candidate, in words, from its settings."""
    c = settings.get("credibility")
    if c is None:
        return "recommended only if P(holdout F1 better) reaches the credibility"
    if settings.get("tolerance") is None:  # a session from before the exact test
        return f"recommended only if P(holdout F1 better) ≥ {c}"
    return (f"recommended only if P(holdout F1 better) ≥ {c}, the exact paired test's "
            f"p ≤ {1 - float(c):.2g}, the 95% interval ends above -{settings['tolerance']:g} "
            f"and at least {settings.get('min_changed')} held-out case(s) improved")


def _row(rnd: int, cid: str, train: Mapping[str, Any] | None, mark: str) -> dict[str, Any]:
    per = {s.get("subject"): s for s in (train or {}).get("subjects") or []}
    return {"round": rnd, "id": cid, "f1": fmt((train or {}).get("f1")) if train else "n/a",
            "counts": "n/a", "by_subject": {k: {"f1": _f1(v), "counts": _counts(v)}
                                            for k, v in per.items()},
            "wrong": "n/a" if not train else str(len(train.get("misses") or [])),
            "mark": mark}


def _rounds(state: Mapping[str, Any], kind: str) -> tuple[list[dict[str, Any]],
                                                           list[dict[str, Any]]]:
    best = state.get("best") or _ORIGINAL
    final = {"recommended": "recommended", "unfinished": "best so far"}.get(kind, "best")
    original = state.get("original") or {}
    rows = [_row(0, _ORIGINAL, original.get("train"), final if best == _ORIGINAL else "")]
    rejected = []
    for r in state.get("rounds") or []:
        scored = [c for c in r.get("candidates") or [] if c.get("train")]
        top = max(scored, key=lambda c: c["train"]["f1"])["id"] if scored else None
        for c in r.get("candidates") or []:
            mark = final if c["id"] == best else "new best" if (
                r.get("improved") and c["id"] == top) else ""
            if not c.get("train") and c.get("proxy"):
                mark = f"screened out (proxy F1 {fmt(c['proxy'].get('f1'))})"
            rows.append(_row(r["round"], c["id"], c.get("train"), mark))
        if not r.get("candidates"):
            rows.append({"round": r["round"], "id": "-", "f1": "", "counts": "",
                         "by_subject": {}, "wrong": "", "mark": "none valid"})
        rejected += [{"round": r["round"], "text": str(x.get("text", "")),
                      "reason": str(x.get("reason", ""))} for x in r.get("rejected") or []]
    return rows, rejected


def _facts(state: Mapping[str, Any]) -> list[tuple[str, str]]:
    split = state.get("split") or {}
    settings = state.get("settings") or {}
    proposer = state.get("proposer") or {}
    fraction = split.get("fraction")
    done = len(state.get("rounds") or [])
    cost = state.get("cost_usd")
    limit = settings.get("max_cost_usd")
    return [
        ("split", f"{len(split.get('train') or [])} train cases, "
                  f"{len(split.get('holdout') or [])} held out "
                  f"({'n/a' if fraction is None else f'{fraction:g}'} of the cases, stratified "
                  f"by expectation, seed {split.get('seed')})"),
        ("subjects", ", ".join(map(str, state.get("subjects") or [])) or "n/a"),
        ("proposer", f"{proposer.get('name')} ({proposer.get('kind')})"
                     + (f": {proposer['note']}" if proposer.get("note") else "")),
        ("rounds", f"{done} of at most {settings.get('rounds')}, up to "
                   f"{settings.get('candidates')} candidates each, {settings.get('trials')} "
                   f"trial(s) per case, credibility {settings.get('credibility')}"),
        ("cost", ("n/a" if cost is None else f"${cost:.4f}")
         + ("" if limit is None else f" (limit ${limit:.4f})")),
        ("started", str(state.get("started_at") or "n/a")),
        ("finished", str(state.get("finished_at") or "not yet")),
    ]


def _files(state: Mapping[str, Any]) -> list[tuple[str, str]]:
    folder = state.get("folder") or (
        str(ExperimentDir.at(Path(state["experiment_dir"])).session(state["id"]).path)
        if state.get("experiment_dir") and state.get("id") else None)
    out = [("session folder", str(folder))] if folder else []
    if state.get("recommended_file"):
        out.append(("recommended SKILL.md", str(state["recommended_file"])))
    if state.get("skill_file"):
        out.append(("skill", str(state["skill_file"])))
    applied = state.get("applied")
    if applied and applied.get("backup"):
        out.append(("backup of the old skill", str(applied["backup"])))
    return out


def outline(state: Mapping[str, Any]) -> Outline:
    """What the reports show (see the module's docstring)."""
    kind, line = verdict_line(state)
    holdout_note, holdout = _holdout(state, kind)
    rows, rejected = _rounds(state, kind)
    n_train = len((state.get("split") or {}).get("train") or [])
    best = state.get("best")
    text = _description(state, best)
    if text is None:  # what stands in for the best description
        label = ("no candidate has beaten it so far" if kind == "unfinished"
                 else "no candidate replaced it")
    else:
        label = {"recommended": f"recommended ({best})", "not-recommended":
                 f"best on the train cases ({best}), not recommended",
                 "unfinished": f"best so far ({best})"}.get(kind, f"best ({best})")
    original = str((state.get("original") or {}).get("description") or "")
    return Outline(
        kind=kind, verdict=line, notes=_notes(state, kind),
        head=(f"ix optimize · experiment {state.get('experiment')} · skill "
              f"{state.get('skill')} · session {state.get('id')} · {state.get('status')}"),
        holdout_note=holdout_note, holdout=holdout,
        candidate=(state.get("holdout") or {}).get("candidate"),
        rounds_note=(f"train F1 [95% CI] of each description on the {n_train} train cases "
                     "(round 0: the original); the best by train F1 goes on"),
        subjects=[str(s) for s in state.get("subjects") or []], rows=rows, rejected=rejected,
        stopped_early=state.get("stopped_early"), original=original, best=text,
        rationales=[(int(r.get("round", 0)), str(r["rationale"]))
                    for r in state.get("rounds") or [] if r.get("rationale")],
        best_label=label, diff=word_diff(original, text) if text is not None else [],
        facts=_facts(state), files=_files(state))


# --------------------------------------------------------------------------- Markdown

def _md_parts(parts: Sequence[Part]) -> str:
    return "".join(md_code(v) if k == "code" else md_text(v) for k, v in parts)


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(md_text(h) or " " for h in header) + " |",
            "|" + "|".join("---" for _ in header) + "|",
            *("| " + " | ".join(md_text(c) for c in row) + " |" for row in rows), ""]


def _md_diff(ops: Sequence[tuple[str, str]]) -> str:
    marks = {"del": "~~", "ins": "**", "same": ""}
    return " ".join(f"{marks[op]}{md_text(words)}{marks[op]}" for op, words in ops)


def optimize_markdown(state: Mapping[str, Any]) -> str:
    """The session as GitHub Markdown (`report.md` of the session's folder)."""
    o = outline(state)
    lines = [f"# ix optimize: {md_text(state.get('skill'))} in "
             f"{md_text(state.get('experiment'))}", "", f"**{md_text(o.verdict)}**", ""]
    lines += [f"- {_md_parts(note)}" for note in o.notes]
    lines += ["", f"_{md_text(o.head)}_", "", "## Holdout", "", md_text(o.holdout_note), ""]
    for s in o.holdout:
        lines += [f"### {md_text(s['subject'])}", ""]
        lines += _md_table(["", "original", f"candidate {o.candidate}"], s["rows"])
        mc = "" if s["mc_error"] is None else f" (Monte Carlo error {s['mc_error']})"
        lines += [f"Difference (candidate − original): **{md_text(s['difference'])}** "
                  f"({md_text(s['sided'])}); P(holdout F1 better) = "
                  f"**{s['prob_better']}**{mc}.", ""]
        if s["exact"]:
            lines += [f"{md_text(s['exact'][:1].upper() + s['exact'][1:])}.", ""]
        if s["failed"]:
            lines += ["Not met:", "", *(f"- {md_text(x)}" for x in s["failed"]), ""]
        lines += [f"Paired majority votes on the {s['cases']} cases:", ""]
        lines += _md_table(["cases", *PAIRS], [[f"{name} ({sum(cells)})", *map(str, cells)]
                                                for name, cells in s["pairs"]])
    lines += ["## Rounds", "", md_text(o.rounds_note) + "; *wrong*: train cases it gets "
              "wrong.", ""]
    several = len(o.subjects) > 1
    header = ["round", "candidate", *(["mean F1", *(f"{s} F1 [95% CI]" for s in o.subjects)]
                                      if several else ["train F1 [95% CI]", "TP/FP/FN/TN"]),
              "wrong", "chosen"]
    rows = []
    for r in o.rows:
        one = next(iter(r["by_subject"].values()), {"f1": r["f1"], "counts": r["counts"]})
        rows.append([str(r["round"]), r["id"],
                     *([r["f1"], *((r["by_subject"].get(s) or {}).get("f1", "")
                                   for s in o.subjects)] if several
                       else [one["f1"], one["counts"]]), r["wrong"], r["mark"]])
    lines += _md_table(header, rows)
    if o.stopped_early:
        lines += [f"Stopped early: {md_text(o.stopped_early)}.", ""]
    if o.rationales:
        lines += ["The proposer's rationale:", ""]
        lines += [f"- round {r}: {md_text(text)}" for r, text in o.rationales]
        lines.append("")
    if o.rejected:
        lines += ["Rejected proposals:", ""]
        lines += [f"- round {x['round']}: {md_text(x['text'])} — *{md_text(x['reason'])}*"
                  for x in o.rejected]
        lines.append("")
    lines += ["## Description", "", "Original:", "", f"> {md_text(o.original)}", ""]
    if o.best is None:
        lines += [f"{md_text(o.best_label[:1].upper() + o.best_label[1:])}.", ""]
    else:
        lines += [f"{md_text(o.best_label[:1].upper() + o.best_label[1:])}:", "",
                  f"> {md_text(o.best)}", "",
                  "Word diff (original → best; ~~deleted~~, **inserted**):", "",
                  f"> {_md_diff(o.diff)}", ""]
    lines += ["## Session", ""]
    lines += [f"- {md_text(k)}: {md_text(v)}" for k, v in o.facts]
    lines += [f"- {md_text(k)}: {md_code(v)}" for k, v in o.files]
    return "\n".join(lines).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- HTML

@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("ix.report", "templates"),
                              autoescape=True, undefined=jinja2.ChainableUndefined,
                              trim_blocks=True, lstrip_blocks=True)


def optimize_body_html(state: Mapping[str, Any]) -> str:
    """The session's sections in a `<div class="ix-report">`, to embed in a page that
    serves `REPORT_CSS` and `OPTIMIZE_CSS` (the `ix view` session page)."""
    return _env().get_template("optimize_body.html.j2").render(
        o=outline(state), state=state, pairs=PAIRS)


def optimize_html(state: Mapping[str, Any]) -> str:
    """The session as one HTML page that needs nothing else: no network, no script."""
    return _env().get_template("report.html.j2").render(
        title=f"ix optimize · {state.get('experiment')} · {state.get('id')}", csp=CSP,
        css=Markup(REPORT_CSS + "\n" + OPTIMIZE_CSS), body=Markup(optimize_body_html(state)))
