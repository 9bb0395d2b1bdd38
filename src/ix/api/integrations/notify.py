"""Telling someone a run or a battery ended: a webhook (`--notify URL`, `--notify-env NAME`)
and a command (`--on-complete CMD`).

The webhook gets one JSON message per run (one per battery) whose `text` chat webhooks
(Slack-compatible) display, verdict first. It is retried with backoff; a failure is only a
warning. The URL may hold a secret token, so it is never written anywhere and never printed:
messages name it by where it came from ("the --notify URL", "the URL in $NAME").

A webhook cannot keep ix waiting: each attempt ends `TIMEOUT_S` after it started whatever the
other end does (httpx's timeouts are per read, and a server answering a byte every second
never trips one), and all the messages of one command share `BUDGET_S`, tries and waits
together.
"""

import asyncio
import json
import math
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ix._version import __version__
from ix.api.battery import BatteryResult
from ix.api.battery_report import outcome_lines
from ix.domain.errors import ConfigError, Warn
from ix.engine.run import RunResult
from ix.report.answer import goal_verdict, metric_name, primary_metric
from ix.report.leaderboard import counts_of, standing
from ix.runtimes.transport import retry_after_header

#: Waits before the 2nd, 3rd and 4th attempt (a `Retry-After` replaces the wait, up to
#: `MAX_WAIT_S`).
DELAYS_S = (0.5, 1.0, 2.0)
MAX_WAIT_S = 30.0
#: One attempt, from connecting to the answer's status and headers: a wall-clock limit.
TIMEOUT_S = 10.0
#: All the messages of one command (`ix run`'s one per run, `ix batch`'s one), tries and
#: waits together: no attempt and no wait goes past it (4 tries of 10 s and the waits fit).
BUDGET_S = 45.0
#: Lines of metrics a message's `text` shows at most (the JSON keeps them all).
TEXT_ROWS = 10


@dataclass(frozen=True)
class Webhook:
    """Where messages go; `label` names it in every message ix prints (never the URL)."""

    url: str = field(repr=False)
    label: str


def webhook(url: str | None = None, env: str | None = None,
            environ: Mapping[str, str] | None = None) -> Webhook | None:
    """The webhook of `--notify URL` or `--notify-env NAME` (None: neither), checked before
    anything runs: a `ConfigError` (naming the flag, never the URL) when it is unusable."""
    if url is not None and env is not None:
        raise ConfigError("give --notify or --notify-env, not both", field="--notify")
    if env is not None:
        value = (os.environ if environ is None else environ).get(env, "").strip()
        if not value:
            raise ConfigError(f"${env} is not set or is empty; --notify-env names the "
                              "environment variable that holds the webhook's URL",
                              field="--notify-env")
        hook = Webhook(value, f"the URL in ${env}")
        flag = "--notify-env"
    elif url is not None:
        hook, flag = Webhook(url.strip(), "the --notify URL"), "--notify"
    else:
        return None
    import httpx  # only when a webhook is given

    try:
        parts = urlsplit(hook.url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        httpx.URL(hook.url)
    except (ValueError, httpx.InvalidURL):
        ok = False
    if not ok:
        hint = (" (for a URL held in an environment variable, use --notify-env NAME)"
                if flag == "--notify" else "")
        raise ConfigError(f"{hook.label} is not an http:// or https:// URL{hint}", field=flag)
    return hook


# --------------------------------------------------------------------------- messages


def run_message(result: RunResult) -> dict[str, Any]:
    """The message of one run: its id, status, each subject's primary metric with its 95%
    interval, the goal's verdict, where its summary is, and `text`, verdict first."""
    s = result.summary
    metric = primary_metric(s)
    goal = s.get("goal")
    metrics = [_metric(block, metric, s.get("sensor")) for block in s.get("subjects") or []]
    trials = sum(int(b.get("trials") or 0) for b in s.get("subjects") or [])
    reason = s.get("reason") or s.get("stop_reason")
    message: dict[str, Any] = {
        "kind": "run", "experiment": s.get("experiment_name"), "run_id": result.run_id,
        "status": result.status, "reason": reason, "trials": trials,
        "errors": s.get("errors"), "goal": _goal(goal), "metrics": metrics,
        "summary": str(result.summary_path), "run_dir": str(result.run_dir), "ix": __version__}
    status = _status_word(result.status, reason)
    lines = ([f"{goal_verdict(goal)} ({message['experiment']}, run {result.run_id})", status]
             if goal else [f"{message['experiment']}: {status} (run {result.run_id})"])
    lines.append(f"{trials} trials, {s.get('errors') or 0} errored")
    lines += _metric_lines(metrics)
    lines.append(f"summary: {result.summary_path}")
    message["text"] = "\n".join(lines)
    return message


def battery_message(result: BatteryResult) -> dict[str, Any]:
    """The message of a battery: how many runs completed, the goals' verdicts and why a run
    did not simply succeed, the pooled metric per experiment × subject, the report's path."""
    report = result.report
    verdicts = report["verdicts"]
    tally: dict[str, int] = {}
    for v in verdicts:
        if v["goal"] is not None:
            tally[v["goal"]] = tally.get(v["goal"], 0) + 1
    metrics = [{"experiment": p["experiment"], "subject": p["subject"], "metric": p["metric"],
                "name": metric_name(p["metric"]), "value": _finite(p["value"]),
                "ci": _ci(p["ci"]), "seeds": p["seeds"]} for p in report["pooled"]]
    message: dict[str, Any] = {
        "kind": "battery", "battery": report["battery"], "status": result.status,
        "planned": result.planned or report["runs"], "runs": report["runs"],
        "completed": report["completed"], "goals": tally, "verdicts": verdicts,
        "metrics": metrics, "folder": str(result.folder),
        "report": str(result.folder / "report.md"),
        "report_json": str(result.folder / "report.json"), "ix": __version__}
    head = (f"Battery {report['battery']}: {report['completed']} of "
            f"{message['planned']} runs completed")
    if tally:
        head += "; goals: " + ", ".join(f"{k} {n}" for k, n in sorted(tally.items()))
    trouble = outcome_lines(report)
    lines = [head, *trouble[:TEXT_ROWS]]
    if len(trouble) > TEXT_ROWS:
        lines.append(f"… and {len(trouble) - TEXT_ROWS} more (see the report)")
    lines += _metric_lines([{**m, "subject": f"{m['experiment']} × {m['subject']}"}
                            for m in metrics], suffix=" over the seeds")
    lines.append(f"report: {message['report']}")
    message["text"] = "\n".join(lines)
    return message


def _metric(block: Mapping[str, Any], metric: str, sensor: str | None) -> dict[str, Any]:
    """A subject's primary metric with its 95% interval: the summary's own, else from its
    counts as the leaderboard computes it."""
    own = block.get("metrics") or {}
    if metric in own and f"{metric}_ci" in own:
        value, ci = own[metric], own[f"{metric}_ci"]
    else:
        s = standing(counts_of(block), metric)
        value, ci = s.estimate, list(s.interval)
    return {"subject": block.get("name"), "metric": metric,
            "name": metric_name(metric, sensor), "value": _finite(value), "ci": _ci(ci),
            "level": 0.95}


def _metric_lines(metrics: Sequence[Mapping[str, Any]], suffix: str = "") -> list[str]:
    lines = []
    for m in metrics[:TEXT_ROWS]:
        value = "n/a" if m["value"] is None else f"{m['value']:.3f}"
        ci = f" [{m['ci'][0]:.2f}, {m['ci'][1]:.2f}]" if m["ci"] else ""
        lines.append(f"{m['subject']}: {m['name']} {value}{ci}{suffix}")
    if len(metrics) > TEXT_ROWS:
        lines.append(f"… and {len(metrics) - TEXT_ROWS} more")
    return lines


def _goal(goal: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not goal:
        return None
    return {"verdict": goal.get("verdict"), "hypothesis": goal.get("hypothesis"),
            "line": goal_verdict(goal)}


def _status_word(status: str, reason: str | None) -> str:
    if status == "completed":
        return "completed"
    return status.upper() + (f": {reason}" if reason else "")


def _finite(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and math.isfinite(x) else None


def _ci(ci: Any) -> list[float] | None:
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return None
    lo, hi = _finite(ci[0]), _finite(ci[1])
    return None if lo is None or hi is None else [lo, hi]


# --------------------------------------------------------------------------- sending


def post(hook: Webhook, message: Mapping[str, Any], *, warn: Warn,
         delays: Sequence[float] = DELAYS_S, timeout: float = TIMEOUT_S,
         sleep: Callable[[float], None] = time.sleep, deadline: float | None = None) -> bool:
    """POST `message` as JSON; retried after each of `delays` on a connection error, a
    timeout, 429 or 5xx (a `Retry-After` replaces the wait). Each attempt ends `timeout`
    seconds after it started, and nothing goes past `deadline` (`time.monotonic()`; default:
    `BUDGET_S` from now). False, with a warning through `warn` that never shows the URL,
    when it did not get through."""
    import httpx  # only when a webhook is given

    deadline = time.monotonic() + BUDGET_S if deadline is None else deadline
    try:
        body = json.dumps(message, ensure_ascii=False, default=str, allow_nan=False).encode()
    except ValueError as exc:  # a NaN somewhere: no receiver could read the message
        warn(f"could not notify {hook.label}: the message is not JSON ({exc})")
        return False
    headers = {"content-type": "application/json", "user-agent": f"ix/{__version__}"}
    attempts, tried = len(delays) + 1, 0
    why, late = "", False
    for attempt in range(attempts):
        limit = min(timeout, deadline - time.monotonic())
        if limit <= 0:
            late = True
            break
        tried += 1
        wait: float | None = None
        try:
            status, retry_after = _attempt(hook.url, body, headers, limit)
        except TimeoutError:
            why = f"no answer within {round(limit, 1):g} s"
        except httpx.TransportError as exc:  # refused, reset, bad TLS
            why = _redacted(f"{type(exc).__name__}: {exc}", hook.url)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:  # asking again won't help
            why = _redacted(f"{type(exc).__name__}: {exc}", hook.url)
            break
        else:
            if 200 <= status < 300:
                return True
            why = f"HTTP {status}"
            if status != 429 and status < 500:
                break  # the receiver refuses it: asking again won't help
            wait = retry_after_header(retry_after)
        if attempt + 1 < attempts:
            pause = min(MAX_WAIT_S, delays[attempt] if wait is None else wait)
            if time.monotonic() + pause >= deadline:
                late = True
                break
            sleep(pause)
    if tried == 0:
        why = "not sent: the time allowed for notifying ran out"
    else:
        why += f", {tried} attempt{'s' if tried > 1 else ''}" + (
            "; then the time allowed for notifying ran out" if late else "")
    warn(f"could not notify {hook.label} ({why}); the results are kept")
    return False


def _attempt(url: str, body: bytes, headers: Mapping[str, str],
             limit: float) -> tuple[int, str | None]:
    """One POST: the answer's status and `Retry-After` (its body is not read), or
    `TimeoutError` `limit` seconds after it started, whatever the other end does: it runs
    under asyncio's `wait_for`, which cancels it wherever it is. In a thread of its own, so
    that it works under a caller's running event loop too, and so that the caller stops
    waiting at `limit` even for what cannot be cancelled (a name lookup the resolver is
    still making): the thread is a daemon, left to end on its own."""
    import httpx

    async def send() -> tuple[int, str | None]:
        async with (httpx.AsyncClient(timeout=limit, follow_redirects=False) as client,
                    client.stream("POST", url, content=body, headers=headers) as response):
            return response.status_code, response.headers.get("retry-after")

    outcome: list[tuple[int, str | None] | BaseException] = []

    def work() -> None:
        try:
            outcome.append(asyncio.run(asyncio.wait_for(send(), limit)))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append(exc)

    thread = threading.Thread(target=work, name="ix-notify", daemon=True)
    thread.start()
    thread.join(limit)
    if not outcome:
        raise TimeoutError
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _redacted(text: str, url: str) -> str:
    """`text` without the URL or any part of it that could carry a token."""
    parts = urlsplit(url)
    secrets = [url, url.rstrip("/"), parts.path, parts.query, parts.fragment,
               parts.netloc, parts.password or "", parts.username or ""]
    for secret in sorted({s for s in secrets if len(s) > 3}, key=len, reverse=True):
        text = text.replace(secret, "[REDACTED]")
    return text


def notify_runs(hook: Webhook, results: Sequence[RunResult], *, warn: Warn) -> None:
    """One message per run to `hook`, all of them within `BUDGET_S`."""
    deadline = time.monotonic() + BUDGET_S
    for r in results:
        post(hook, run_message(r), warn=warn, deadline=deadline)


def notify_battery(hook: Webhook, result: BatteryResult, *, warn: Warn) -> None:
    """One message for the whole battery to `hook`, within `BUDGET_S`."""
    post(hook, battery_message(result), warn=warn)


# --------------------------------------------------------------------------- --on-complete


def check_command(command: str | None) -> list[str] | None:
    """`--on-complete CMD` split as a shell would (never run through one); a `ConfigError`
    before anything runs when it cannot be."""
    if command is None:
        return None
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"cannot split the command: {exc}", field="--on-complete") from None
    if not argv:
        raise ConfigError("the command is empty", field="--on-complete")
    return argv


def on_complete(command: str, paths: Sequence[Path | str], env: Mapping[str, str], *,
                warn: Warn) -> None:
    """Run `command` with `paths` as its last arguments and `env` added to the environment;
    its output goes to stderr (stdout stays the command's, e.g. `--json`); its failure is
    only a warning."""
    argv = [*(check_command(command) or []), *map(str, paths)]
    try:
        errout: int | None = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a stderr without a file (captured)
        errout = None
    try:
        done = subprocess.run(argv, check=False, timeout=300, stdout=errout,
                              env={**os.environ, **env})
    except (OSError, subprocess.SubprocessError) as exc:
        warn(f"--on-complete {argv[0]!r} failed: {exc}")
        return
    if done.returncode:
        warn(f"--on-complete {argv[0]!r} exited with {done.returncode}")


def on_runs_complete(command: str, results: Sequence[RunResult], *, warn: Warn) -> None:
    """`ix run --on-complete`: the command once per run, with its summary's path."""
    for r in results:
        on_complete(command, [r.summary_path],
                    {"IX_SUMMARY": str(r.summary_path), "IX_RUN_STATUS": r.status}, warn=warn)


def on_battery_complete(command: str, result: BatteryResult, *, warn: Warn) -> None:
    """`ix batch --on-complete`: the command once, with each run's summary path and last the
    battery's `report.json`."""
    summaries = [str(r.summary_path) for r in result.runs]
    report = result.folder / "report.json"
    on_complete(command, [*summaries, report],
                {"IX_BATTERY": str(result.folder), "IX_REPORT": str(report),
                 "IX_SUMMARIES": os.pathsep.join(summaries),
                 "IX_RUN_STATUS": result.status}, warn=warn)


__all__ = ["Webhook", "battery_message", "check_command", "notify_battery", "notify_runs",
           "on_battery_complete", "on_complete", "on_runs_complete", "post", "run_message",
           "webhook"]
