"""`ix optimize`: improve a skill's description on train cases, judge it on held-out ones."""

import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ix.api import ConfigError, Limits
from ix.api.optimize import CREDIBILITY, FINALISTS, MIN_CHANGED, TOLERANCE, Settings
from ix.api.optimize import optimize as run_optimize
from ix.cli.options import CacheModeOption, Json, Lab, ProgressOption
from ix.cli.options import progress_mode as progress_mode_of
from ix.cli.output import diagnostic, out, print_json
from ix.cli.progress import RunProgress
from ix.report.optimize_terminal import optimize_renderable

if TYPE_CHECKING:
    from ix.api import Plan


class _Steps(RunProgress):
    """`ix run`'s progress, each bar named after the description it runs (the run's folder:
    `original`, `r1c2`), plus each step of the session on stderr."""

    def on_plan(self, plan: "Plan") -> None:
        super().on_plan(plan)
        if self._progress is not None:
            which = plan.loaded.path.name
            for name, task in self._tasks.items():
                self._progress.update(task, description=escape(
                    f"{plan.loaded.experiment.name} · {which} · {name}"))

    def on_step(self, message: str) -> None:
        if self.mode != "json":
            diagnostic("ix optimize:", message, "dim")


def optimize(
    experiment: Annotated[str, typer.Argument(
        help="The experiment whose cases judge the description: a name in the lab, or a "
             "path.", show_default=False)],
    lab: Lab = None,
    skill: Annotated[str | None, typer.Option(
        "--skill", help="The skill whose description to improve (default: the activation "
                        "sensor's skill, else the experiment's).", show_default=False)] = None,
    proposer: Annotated[str, typer.Option(
        "--proposer", help="Who writes candidates: `keywords` (offline baseline for a word "
                           "router: adds words shared by missed prompts, excludes those "
                           "shared by false positives), a subject profile "
                           "(claude-sonnet-api, or one added with `ix subjects add`) or a "
                           "runtime kind (anthropic, openai, claude-code, command, ...; with "
                           "the experiment's options of that kind).")] = "keywords",
    rounds: Annotated[int, typer.Option(
        "--rounds", min=1, help="Rounds of proposals at most (fewer when every train case is "
                                "right or nothing new is proposed).")] = 5,
    candidates: Annotated[int, typer.Option(
        "--candidates", min=1, help="Candidate descriptions asked for per round.")] = 3,
    holdout: Annotated[float, typer.Option(
        "--holdout", help="Share of the cases held out (stratified by expectation) to judge "
                          "the final candidate; never shown to the proposer.")] = 0.4,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="Seed of the train/holdout split (default: the experiment's seed); "
                       "another seed starts another session.", show_default=False)] = None,
    credibility: Annotated[float, typer.Option(
        "--credibility", help="Recommend the candidate only if P(holdout F1 better than the "
                              "original) reaches this and the exact paired test's p is at "
                              "most 1 − this.")] = CREDIBILITY,
    tolerance: Annotated[float, typer.Option(
        "--tolerance", help="Recommend only if the 95% interval of the holdout F1 difference "
                            "ends above −this (a loss it still allows).")] = TOLERANCE,
    min_changed: Annotated[int, typer.Option(
        "--min-changed", min=1, help="Recommend only if the gain rests on at least this many "
                                     "held-out cases the candidate gets right and the "
                                     "original wrong.")] = MIN_CHANGED,
    screen_with: Annotated[str | None, typer.Option(
        "--screen-with", help="A cheap proxy that ranks each round's candidates on the train "
                              "cases, spelt as a subject's proxy: is (a subject of the "
                              "experiment, a registry subject, a runtime kind such as lexical, "
                              "or a runtime mapping). Only the top --finalists run on the "
                              "real subject; the holdout verdict is still the real subject's.",
        show_default=False)] = None,
    finalists: Annotated[int | None, typer.Option(
        "--finalists", min=1, help="With --screen-with: the candidates of a round the proxy "
                                   "ranks highest, the only ones run on the real subject "
                                   f"(default {FINALISTS}).", show_default=False)] = None,
    apply: Annotated[bool, typer.Option(
        "--apply", help="Write a recommended description into the skill's SKILL.md, "
                        "which must be the lab's own (skills/<name>/SKILL.md, reached "
                        "through no symlink): atomically, the old file kept as "
                        "SKILL.md.<stamp>.bak, the lab's audit log recording it. Without it "
                        "the skill is never touched.")] = False,
    max_cost: Annotated[float | None, typer.Option(
        "--max-cost", min=0, help="Stop once the session's runs and proposals spent this many "
                                  "USD (run the same command again to continue).",
        show_default=False)] = None,
    cache: Annotated[bool, typer.Option(
        "--cache", help="Record the runs' observations in the lab's cache and replay them "
                        "when the same description meets the same case and seed again (see "
                        "--cache-mode).")] = False,
    cache_mode: CacheModeOption = "use",
    progress_mode: ProgressOption = "auto",
    json_out: Json = False,
) -> None:
    """Improve a skill's description with held-out evidence: propose, test on train cases,
    judge the best on held-out cases.

    The cases are split (stratified, seeded) into train and holdout. Round 0 runs the
    original description on the train cases; each round a proposer gets the train cases it
    gets wrong and the descriptions tried, and its candidates run on the train cases with
    the experiment's subjects, trials and seeds; the best by train F1 goes on. Finally the
    best candidate and the original run on the holdout cases, compared case by case (paired
    F1); the candidate is recommended only if P(holdout F1 better) reaches --credibility,
    the exact paired test agrees (p ≤ 1 − credibility), the 95% interval of the difference
    ends above −(--tolerance) and the gain rests on at least --min-changed improved cases.

    Everything lands in <experiment>/results/optimize/<id>/ (the split, every candidate, its
    scores with intervals, the proposer's requests and answers, the recommended SKILL.md,
    report.md and report.html); `ix view` shows it. Killed or cancelled, the same command
    continues the session; completed, it shows it again.

    Exit codes: 0 done (whatever the verdict), 1 a run of the session failed, 2 bad input,
    130 cancelled or stopped by --max-cost (run the same command to continue).
    """
    if finalists is not None and screen_with is None:
        raise ConfigError("counts only with --screen-with: without a proxy every candidate "
                          "runs on the real subject", field="--finalists")
    bars = progress_mode_of(progress_mode)
    settings = Settings(skill=skill, rounds=rounds, candidates=candidates, holdout=holdout,
                        seed=seed, credibility=credibility, max_cost_usd=max_cost,
                        tolerance=tolerance, min_changed=min_changed,
                        screen_with=screen_with,
                        finalists=FINALISTS if finalists is None else finalists)
    with _Steps(enabled=not json_out, mode=bars) as progress:
        result = run_optimize(lab, experiment, settings, proposer=proposer, apply=apply,
                              limits=Limits(), observer=progress,
                              command=["ix", *sys.argv[1:]],
                              cache=cache_mode if cache or cache_mode != "use" else None)
    state = result.state
    if json_out:
        print_json(state)
    else:
        out.print(optimize_renderable(state))
    if apply and state["status"] == "completed" and not state.get("recommended"):
        diagnostic("ix optimize:", "--apply: nothing applied, the session recommends no "
                   "description; the skill is unchanged")
    if state["status"] == "failed":
        diagnostic("ix optimize:", f"session {state['id']} failed: {state.get('reason')}")
        raise typer.Exit(1)
    if state["status"] == "cancelled":
        diagnostic("ix optimize:", f"session {state['id']} stopped ({state.get('reason')}); "
                   "completed trials are kept; run the same command again to continue")
        raise typer.Exit(130)


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("optimize")(optimize)
