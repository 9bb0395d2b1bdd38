"""Options that several commands share, declared once, and the settings every command tree of
`ix` is built with. Imports typer and nothing of weight: `ix --help` reads this module."""

from typing import Annotated, Any, Literal

import typer

from ix.domain.errors import ConfigError

#: How every `typer.Typer` of ix is built: plain help text (no rich markup, no completion
#: commands), `-h` as well as `--help`.
SETTINGS: dict[str, Any] = {
    "no_args_is_help": True,
    "rich_markup_mode": None,
    "context_settings": {"help_option_names": ["-h", "--help"]},
}

Lab = Annotated[str | None, typer.Option(
    "--lab", help="The lab: a path, or a name searched from the project root. "
                  "Default: walk up from the working directory.", show_default=False)]
Json = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of tables.")]
JsonText = Annotated[bool, typer.Option("--json", help="Print JSON on stdout instead of text.")]
JsonFormat = Annotated[bool, typer.Option("--json",
                                          help="Print JSON on stdout (= --format json).")]
Experiments = Annotated[list[str] | None, typer.Argument(
    help="Experiment names in the lab, or paths. Default: the experiment the working "
         "directory is in, else every experiment of the lab.", show_default=False)]
Executor = Annotated[str, typer.Option(
    "--executor", help="Where trials run: local (this process, asyncio) or ray (as tasks on a "
                       "Ray cluster; pip install 'ix-lab[ray]'). Recording, resume and Ctrl-C "
                       "work the same.")]
Address = Annotated[str | None, typer.Option(
    "--address", help="With --executor ray: the cluster to join (HOST:PORT of its head, or "
                      "ray://HOST:PORT). Default: start a private local Ray.",
    show_default=False)]
Strict = Annotated[bool, typer.Option(
    "--strict", help="Treat design warnings (too few cases, no control, one trial on a "
                     "stochastic runtime, ...) as errors: exit 2, nothing run.")]
OnComplete = Annotated[str | None, typer.Option(
    "--on-complete", metavar="CMD", help="Run this command (no shell) when the run ends, "
                                         "with the summary's path as its last argument (a "
                                         "battery: each run's, then its report.json).",
    show_default=False)]
Notify = Annotated[str | None, typer.Option(
    "--notify", metavar="URL", help="POST a JSON message (with a Slack-compatible text) to "
                                    "this webhook when it ends; retried; the URL is never "
                                    "written anywhere.", show_default=False)]
NotifyEnv = Annotated[str | None, typer.Option(
    "--notify-env", metavar="NAME", help="As --notify, with the URL read from this "
                                         "environment variable (a URL holding a token).",
    show_default=False)]

#: Options whose value `spec.yaml` and the audit log never record (a webhook's URL may hold
#: a token): `recorded_command` writes `[REDACTED]` in its place.
UNRECORDED = ("--notify",)


def recorded_command(argv: list[str]) -> list[str]:
    """The command line a run records, `ix` first: `argv` (sys.argv) without the values of
    `UNRECORDED` options (`--notify URL` and `--notify=URL` alike)."""
    out = ["ix"]
    hide = False
    for arg in argv[1:]:
        name = arg.split("=", 1)[0]
        if hide:
            out.append("[REDACTED]")
        elif name in UNRECORDED and "=" in arg:
            out.append(f"{name}=[REDACTED]")
        else:
            out.append(arg)
        hide = not hide and arg in UNRECORDED
    return out


CacheModeOption = Annotated[str, typer.Option(
    "--cache-mode", help="use: replay hits, record misses; refresh: run and overwrite; "
                         "replay: never call a subject (a miss is an errored trial).")]
ProgressOption = Annotated[str, typer.Option(
    "--progress", help="auto (a live bar on a terminal), bar, json (one event per line on "
                       "stderr) or none.")]
PROGRESS_MODES = ("auto", "bar", "json", "none")


def progress_mode(raw: str) -> Literal["auto", "bar", "json", "none"]:
    """The value of `--progress`, checked."""
    if raw not in PROGRESS_MODES:
        raise ConfigError(f"unknown progress mode {raw!r}; allowed: auto, bar, json, none",
                          field="--progress")
    return raw  # type: ignore[return-value]


def trial_count(raw: str | None) -> int | Literal["auto"] | None:
    """The value of `--trials`: a whole number >= 1, or 'auto'."""
    if raw is None or raw == "auto":
        return raw  # type: ignore[return-value]
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"must be a whole number >= 1 or 'auto', got {raw!r}",
                          field="--trials")
    return value
