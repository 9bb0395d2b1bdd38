"""`ix calibrate`: how far a cheap proxy subject stands in for the real one (docs/subjects.md,
"Proxy subjects")."""

import sys
from typing import Annotated, Any

import typer

from ix.api import Limits
from ix.api.calibrate import Settings
from ix.api.calibrate import calibrate as run_calibration
from ix.cli.options import Json, Lab, ProgressOption
from ix.cli.options import progress_mode as progress_mode_of
from ix.cli.output import diagnostic, out, print_json
from ix.cli.progress import RunProgress
from ix.report.answer import interval_text, num_text
from ix.report.tables import table


def calibrate(
    experiment: Annotated[str, typer.Argument(
        help="The experiment whose cases to calibrate on: a name in the lab, or a path.",
        show_default=False)],
    subject: Annotated[str | None, typer.Option(
        "--subject", help="The subject the proxy stands in for (default: the first with a "
                          "`proxy:`, else the first).", show_default=False)] = None,
    proxy: Annotated[str | None, typer.Option(
        "--proxy", help="The cheap stand-in (default: the subject's `proxy:`): a subject of "
                        "the experiment, a registry subject (claude-haiku), a runtime kind "
                        "(lexical) or a runtime mapping ('{kind: lexical, threshold: 1}').",
        show_default=False)] = None,
    n: Annotated[int, typer.Option(
        "--n", min=2, help="Cases to sample (seeded, without replacement; all when there "
                           "are fewer).")] = 20,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="Seed of the sample and of the trials (default: the experiment's).",
        show_default=False)] = None,
    trials: Annotated[int | None, typer.Option(
        "--trials", min=1, help="Trials per case and subject (default: the experiment's).",
        show_default=False)] = None,
    session: Annotated[str | None, typer.Option(
        "--session", help="Rank an `ix optimize` session's candidate descriptions (its id) "
                          "instead of the experiment's subjects.", show_default=False)] = None,
    lab: Lab = None,
    progress_mode: ProgressOption = "auto",
    json_out: Json = False,
) -> None:
    """Calibrate a proxy subject: run a subject and its cheap stand-in on a seeded sample of
    cases and say whether the proxy is good enough to screen with.

    Both run the same cases under the same trial seeds (common random numbers), in one
    ordinary run of the experiment (its results/). A case's verdict is its
    majority vote. The answer first: how many cases the proxy's verdict agrees on and
    Cohen's κ with its 95% interval; good enough to screen when κ ≥ 0.6 and its interval's
    low end ≥ 0.3. Then sensitivity and specificity of the proxy's verdicts against the
    subject's, Spearman's ρ of the per-case rates, and Kendall's τ of the order the two give
    the candidates (the experiment's other subjects, each beside its own proxy twin, or
    --session's descriptions), each with its 95% interval; "not enough candidates" below 3.

    Exit codes: 0 shown (whatever the verdict), 1 the run failed, 2 bad input, 130
    cancelled."""
    settings = Settings(subject=subject, proxy=proxy, n=n, seed=seed, session=session,
                        trials=trials)
    with RunProgress(enabled=not json_out, mode=progress_mode_of(progress_mode)) as progress:
        data = run_calibration(lab, experiment, settings, limits=Limits(), observer=progress,
                               command=["ix", *sys.argv[1:]])
    if json_out:
        print_json(data)
    else:
        _show(data)
    if data["status"] == "failed":
        diagnostic("ix calibrate:", f"run {data['run_id']} failed")
        raise typer.Exit(1)
    if data["status"] == "cancelled":
        diagnostic("ix calibrate:", f"run {data['run_id']} was cancelled; its trials are kept")
        raise typer.Exit(130)


def _cell(e: dict[str, Any] | None) -> str:
    if e is None or e["value"] is None:
        return "n/a"
    return f"{num_text(e['value'], 2)} {interval_text(e['ci'])}"


def _show(data: dict[str, Any]) -> None:
    out.print(data["verdict"], markup=False, soft_wrap=True)
    a = data["agreement"]
    t = table(None, "measure", "value [95%]", "of", right=("value [95%]", "of"))
    for name, key in (("sensitivity", "sensitivity"), ("specificity", "specificity"),
                      ("Cohen's kappa", "kappa"), ("Spearman rho, rates", "rate_correlation")):
        e = a[key]
        t.add_row(name, _cell(e), "" if e is None else str(e["n"]))
    out.print(t)
    r = data["ranking"]
    if r["tau"] is None:
        out.print(f"ranking: {r['note']}", markup=False, soft_wrap=True)
    else:
        out.print(f"ranking: Kendall tau {_cell(r['tau'])} over {len(r['candidates'])} "
                  f"candidates", markup=False, soft_wrap=True)
    cost, ms = data["cost_usd"], data["duration_ms"]
    out.print(f"{data['n']} cases x {data['trials']} trial(s); cost: subject "
              f"${cost['subject']:.4f}, proxy ${cost['proxy']:.4f}; time per trial: subject "
              f"{_ms(ms['subject'])}, proxy {_ms(ms['proxy'])}", markup=False, soft_wrap=True)
    out.print(f"run {data['run_id']} ({data['run_dir']})", markup=False, soft_wrap=True)


def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0f} ms"


def register(app: typer.Typer) -> None:
    """Add the command to the `ix` application."""
    app.command("calibrate")(calibrate)
