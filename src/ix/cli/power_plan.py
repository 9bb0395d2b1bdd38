"""`ix plan`: power analysis, how many cases and trials."""

from collections.abc import Mapping
from typing import Annotated, Any

import typer
from rich.markup import escape

from ix.api import power_plan
from ix.cli.options import Json, Lab
from ix.cli.output import out, print_json
from ix.domain.errors import ConfigError


def plan(
    experiment: Annotated[str | None, typer.Argument(
        help="Take planning values (rates, variances, trials) from this experiment's latest "
             "run; before its first run, from its design (its cases and trials, rate 0.5).",
        show_default=False)] = None,
    lab: Lab = None,
    width: Annotated[float | None, typer.Option(
        "--width", help="Target full width of a rate's credible interval: how many units "
                        "(cases, or trials of one case) are needed.", show_default=False)] = None,
    mde: Annotated[float | None, typer.Option(
        "--mde", help="Minimum difference between two subjects to detect.",
        show_default=False)] = None,
    paired: Annotated[bool, typer.Option(
        "--paired", help="Both subjects run the same cases (Miller's paired design).")] = False,
    p: Annotated[float | None, typer.Option(
        "--p", "--p1", help="Planning rate (of the control); default 0.5, the worst case.",
        show_default=False)] = None,
    trials: Annotated[int | None, typer.Option(
        "--trials", "-n", help="Trials per case (paired design).", show_default=False)] = None,
    cases: Annotated[int | None, typer.Option(
        "--cases", help="Paired: report the detectable difference for this many cases.",
        show_default=False)] = None,
    sigma2_a: Annotated[float | None, typer.Option(
        "--sigma2-a", help="Paired: within-case trial variance of the control "
                           "(default p(1-p)).", show_default=False)] = None,
    sigma2_b: Annotated[float | None, typer.Option(
        "--sigma2-b", help="Paired: within-case trial variance of the variant "
                           "(default: the control's).", show_default=False)] = None,
    omega2: Annotated[float | None, typer.Option(
        "--omega2", help="Paired: variance across cases of the difference of true rates "
                         "(default 0: optimistic).", show_default=False)] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="Two-sided significance.")] = 0.05,
    power: Annotated[float, typer.Option("--power", help="Power, 1 - beta.")] = 0.8,
    level: Annotated[float, typer.Option("--level", help="Credible level (--width).")] = 0.95,
    method: Annotated[str, typer.Option(
        "--method", help="Independent design: unpooled, pooled or cohen_h.")] = "unpooled",
    effect: Annotated[float | None, typer.Option(
        "--effect", help="EXPERIMENT's goal: the true effect (treatment - control on the "
                         "goal's metric) to plan for; default twice the goal's min_effect.",
        show_default=False)] = None,
    json_out: Json = False,
) -> None:
    """Power analysis: how many cases and trials for a target interval width or difference,
    or, for an experiment with a goal, how many cases settle the goal.

    Examples: `ix plan --width 0.2`; `ix plan --mde 0.1 --p1 0.7`;
    `ix plan --mde 0.1 --paired --trials 5`; `ix plan skill-activation --mde 0.1 --paired`;
    `ix plan skill-activation --effect 0.2` (the goal, simulated with ix's own rule).
    """
    try:
        result = power_plan.plan_power(lab, experiment, width=width, mde=mde, paired=paired, p=p,
                                     trials=trials, cases=cases, sigma2_a=sigma2_a,
                                     sigma2_b=sigma2_b, omega2=omega2, alpha=alpha,
                                     power=power, level=level, method=method, effect=effect)
    except ValueError as exc:  # a combination no check above foresaw: still one line
        raise ConfigError(str(exc), field="ix plan") from None
    answers = result["answers"]
    if json_out:
        print_json(result)
        return
    for a in answers:
        if a["question"] == "goal":
            reach = a.get("reachable")
            why = reach["why"] if reach else None
            if a.get("p_settle") is None:       # nothing sized: say why
                out.print(f"goal: {escape(a.get('note') or 'nothing to size')}")
                if why:
                    out.print(f"  {escape(why)}")
                continue
            pair = " vs ".join(a.get("compare") or [])
            rule = escape(f"{a['metric']} {a['direction']} beyond {a['min_effect']:g}"
                          + (f", {pair}" if pair else ""))
            if a["cases"] is None:
                out.print(f"no run up to [bold]{a['simulated_cases']}[/] {a['unit']} settles "
                          f"the goal ({rule}) with probability {a['target']:g}: "
                          f"{a['p_settle']:.2f} at that size", markup=True)
            else:
                out.print(f"[bold]{a['cases']}[/] {a['unit']} ({a['trials_per_case']} "
                          f"trial(s) each) settle the goal ({rule}) with probability "
                          f"[bold]{a['p_settle']:.2f}[/] (supported {a['p_supported']:.2f}, "
                          f"refuted {a['p_refuted']:.2f}; {a['simulations']} simulated runs "
                          f"judged by ix's own rule; the t approximation said "
                          f"{a['t_start'] if a['t_start'] is not None else 'n/a'})", markup=True)
            if why:     # a verdict the control leaves out of reach (STATS.md §10)
                out.print(f"  {escape(why)}")
            criterion = a.get("criterion")
            if criterion:
                out.print(f"  [dim]sized {escape(criterion)}[/]", markup=True)
        elif a["question"] == "width":
            lo, hi = a["achieved_interval"]
            out.print(f"[bold]{a['n']}[/] units give an interval of width ≤ {width:g} "
                      f"(at the planning rate: [{lo:.3f}, {hi:.3f}])", markup=True)
        elif a["question"] == "independent":
            out.print(f"[bold]{a['n_per_subject']}[/] cases per subject to detect a "
                      f"difference of {mde:g}", markup=True)
        else:
            if "n_cases" in a:
                out.print(f"[bold]{a['n_cases']}[/] shared cases ({a['trials_per_case']} "
                          f"trial(s) each) to detect a difference of {a['mde']:g} in the "
                          f"{escape(a['metric'])}", markup=True)
            m = a.get("mde_for_cases")
            if m is not None:
                out.print(f"with {m['cases']} shared cases ({a['trials_per_case']} trial(s) "
                          f"each) the smallest detectable difference in the "
                          f"{escape(a['metric'])} is [bold]{m['mde']:.3f}[/]", markup=True)
        for assumption in a["assumptions"]:
            out.print(f"  [dim]assuming {escape(assumption)}[/]", markup=True)
    source = result.get("from_run")
    if source is not None:
        out.print(f"[dim]planning values{_scope(source)} from {escape(source['summary'])}: "
                  f"p={source['p']:.3f}, "
                  f"sigma2_a={source['sigma2_a']:.4f}, sigma2_b={source['sigma2_b']:.4f}, "
                  f"omega2={source['omega2']:.4f}, {source['cases']} cases × "
                  f"{source['trials']} trials[/]", markup=True)
    design = result.get("from_design")
    if design is not None:
        out.print(f"[dim]planning values{_scope(design)} from the design of "
                  f"{escape(design['experiment'])}: {design['cases']} cases × "
                  f"{design['trials']} trials[/]", markup=True)
    notes = source["notes"] if source is not None else design["notes"] if design else []
    for note in notes:
        out.print(f"[dim]  note: {escape(note)}[/]", markup=True)


def _scope(values: Mapping[str, Any]) -> str:
    """Which cases the planning values are of, for an activation experiment (DESIGN.md §8)."""
    scope = values.get("scope")
    return f" of the {scope} cases" if scope else ""


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("plan")(plan)
