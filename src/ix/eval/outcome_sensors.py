"""Sensors on what a subject made in its workspace (DESIGN.md §10): `file_exists`,
`file_matches` and `check`. Each reads the workspace as the subject left it, after the
trial and before it is removed; a trial without a workspace has no verdict from them (n/a).

Paths are globs relative to the workspace, `/`-separated, where `*` and `?` stay within one
folder and `**` crosses any number of them. Only regular files count: a symlink is never
followed (a subject could point one at the user's files).
"""

import asyncio
import fnmatch
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field

from ix.domain.errors import ConfigError, TrialError
from ix.domain.model import Model
from ix.domain.types import Interaction, Reading
from ix.eval.json_path import json_equal, parse_json_path, resolve_json_path, short
from ix.eval.process import last_json_object, program_env, run_process

#: The most of a file `file_matches` reads.
MAX_READ_BYTES = 16 << 20


def matching_files(root: Path, pattern: str) -> list[str]:
    """The regular files under `root` whose relative path matches `pattern`, sorted; folders
    reached through a link are not entered."""
    wanted = [p for p in pattern.replace("\\", "/").split("/") if p not in ("", ".")]
    found: list[str] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        rel = Path(folder).relative_to(root).parts
        dirs.sort()
        for name in sorted(files):
            parts = [*rel, name]
            if _match(parts, wanted) and stat.S_ISREG(
                    os.lstat(os.path.join(folder, name)).st_mode):
                found.append("/".join(parts))
    return found


def _match(parts: list[str], pattern: list[str]) -> bool:
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_match(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) \
        and _match(parts[1:], pattern[1:])


def _no_workspace(name: str) -> list[Reading]:
    return [Reading(sensor_name=name, passed=None, details=(
        "no workspace: give the experiment `workspace:` or the case `files:`"))]


class FileExistsOptions(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    path: str = Field(min_length=1)


class FileExistsSensor:
    """Did the subject leave a file at `path` (a glob)? Score 1.0 if so, else 0.0."""

    name = "file_exists"

    def __init__(self, options: FileExistsOptions):
        self.path = options.path

    def sense(self, interaction: Interaction) -> list[Reading]:
        if interaction.workspace is None:
            return _no_workspace(self.name)
        found = matching_files(interaction.workspace, self.path)
        if not found:
            return [Reading(sensor_name=self.name, passed=False, score=0.0,
                            details=f"no file matches {self.path}")]
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        return [Reading(sensor_name=self.name, passed=True, score=1.0, details=shown,
                        metrics={"files": len(found)})]


class FileMatchesOptions(Model):
    """`path` (a glob) and exactly one of `contains`, `regex`, `equals` (the whole text) or
    `json_path` (with `equals`: the JSON value expected there)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    path: str = Field(min_length=1)
    contains: str | None = None
    regex: str | None = None
    json_path: str | None = None
    equals: Any = None


class FileMatchesSensor:
    """Does every file at `path` (at least one) hold what is asked? The first that does not
    is named."""

    name = "file_matches"

    def __init__(self, options: FileMatchesOptions):
        given = [k for k in ("contains", "regex", "json_path") if getattr(options, k) is not None]
        if "equals" in options.model_fields_set and options.json_path is None:
            given.append("equals")
        if len(given) != 1:
            raise ConfigError("give exactly one of contains, regex, equals, json_path (with "
                              "equals)" + (f" (got {', '.join(given)})" if given else ""),
                              field=given[1] if len(given) > 1 else "regex")
        self.path = options.path
        self.mode = given[0]
        self.options = options
        pattern, json_path = compiled(options.regex, 0, options.json_path,
                                      "equals" in options.model_fields_set)
        if pattern is not None:
            self.pattern = pattern
        if json_path is not None:
            self.json_path = json_path

    def sense(self, interaction: Interaction) -> list[Reading]:
        if interaction.workspace is None:
            return _no_workspace(self.name)
        found = matching_files(interaction.workspace, self.path)
        if not found:
            return [self._reading(False, f"no file matches {self.path}")]
        for rel in found:
            why = self._fails(interaction.workspace / rel)
            if why is not None:
                return [self._reading(False, f"{rel}: {why}")]
        return [self._reading(True, f"{len(found)} file(s) at {self.path} "
                                    f"{'match' if len(found) > 1 else 'matches'}")]

    def _reading(self, passed: bool, details: str) -> Reading:
        return Reading(sensor_name=self.name, passed=passed, score=1.0 if passed else 0.0,
                       details=details)

    def _fails(self, path: Path) -> str | None:
        """Why the file at `path` does not hold what is asked (None: it does)."""
        try:
            with open(path, "rb", opener=_no_follow) as f:
                data = f.read(MAX_READ_BYTES + 1)
        except OSError as exc:
            return f"cannot be read: {exc.strerror or exc}"
        if len(data) > MAX_READ_BYTES:
            return f"larger than {MAX_READ_BYTES >> 20} MiB"
        text = data.decode("utf-8", errors="replace")
        opts = self.options
        if opts.contains is not None:
            return None if opts.contains in text else f"does not contain {short(opts.contains)}"
        if self.mode == "regex":
            return None if self.pattern.search(text) else f"no match for /{opts.regex}/"
        if self.mode == "equals":
            return None if text == opts.equals or text.rstrip("\n") == opts.equals \
                else f"is not {short(str(opts.equals))}"
        try:
            value = resolve_json_path(json.loads(text), self.json_path)
        except ValueError as exc:
            return f"not JSON: {exc}"
        except LookupError as exc:
            return f"{opts.json_path}: {exc}"
        if json_equal(value, opts.equals):
            return None
        return (f"{opts.json_path} = {short(json.dumps(value, default=str))}, expected "
                f"{short(json.dumps(opts.equals, default=str))}")


def compiled(regex: str | None, flags: int, json_path: str | None, has_equals: bool,
             ) -> tuple[re.Pattern[str] | None, Any]:
    """A matcher's `regex` compiled and its `json_path` parsed (the parsed path needs the
    value `equals` expects there): `ConfigError` naming the option on a bad one."""
    pattern = parsed = None
    if regex is not None:
        try:
            pattern = re.compile(regex, flags)
        except re.error as exc:
            raise ConfigError(f"not a valid regular expression: {exc}", field="regex") from None
    if json_path is not None:
        if not has_equals:
            raise ConfigError("required with json_path (the JSON value expected there)",
                              field="equals")
        try:
            parsed = parse_json_path(json_path)
        except ValueError as exc:
            raise ConfigError(str(exc), field="json_path") from None
    return pattern, parsed


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK)


class CheckOptions(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    #: the program and its arguments, run in the finished workspace (no shell)
    command: list[str] = Field(min_length=1)
    timeout_s: float = Field(60.0, gt=0)
    #: environment variables passed through by name (the program gets only the basics)
    env_passthrough: list[str] = Field(default_factory=list)


class CheckSensor:
    """Runs a program in the finished workspace (`pytest -q`, a script): it passes when the
    program exits 0. A JSON object on its last line of output with a numeric `score` is the
    reading's score (else 1.0 or 0.0). `IX_CASE_ID` in its environment names the case; a
    `{{ experiment }}` in `command` is the experiment's folder (`ix.engine.plan`)."""

    name = "check"

    def __init__(self, options: CheckOptions):
        self.options = options

    async def sense(self, interaction: Interaction) -> list[Reading]:
        if interaction.workspace is None:
            return _no_workspace(self.name)
        opts = self.options
        env = program_env(os.environ, opts.env_passthrough)
        env["IX_CASE_ID"] = str(getattr(interaction.stimulus, "id", ""))
        try:
            async with asyncio.timeout(opts.timeout_s):
                done = await run_process(opts.command, stdin=None, cwd=str(interaction.workspace),
                                         env=env, max_output_bytes=1 << 20)
        except TimeoutError:
            return [Reading(sensor_name=self.name, passed=False, score=0.0,
                            details=f"{opts.command[0]}: no end within {opts.timeout_s:g} s")]
        except TrialError as exc:  # the program is missing or cannot start: no verdict
            raise TrialError("check_failed", f"check {opts.command[0]!r}: {exc.message}") \
                from None
        passed = done.exit_code == 0
        score = _score(done.stdout or "")
        tail = (done.stderr or done.stdout or "").strip().splitlines()[-1:] or [""]
        details = f"{opts.command[0]} exited {done.exit_code}" + (
            f": {short(tail[0])}" if not passed and tail[0] else "")
        return [Reading(sensor_name=self.name, passed=passed,
                        score=score if score is not None else (1.0 if passed else 0.0),
                        details=details, metrics={"exit_code": done.exit_code,
                                                  **({"score": score} if score is not None
                                                     else {})})]


#: What a `check` sensor's command may name the experiment's folder by: its grader lives
#: there, not in the workspace the subject sees.
EXPERIMENT_VARIABLE = "{{ experiment }}"


def with_experiment(kind: str, options: dict[str, Any], experiment: Path) -> dict[str, Any]:
    """A sensor's options with `{{ experiment }}` in a `check`'s command made the
    experiment's folder (experiment.yaml's sensors and a case's `checks:` alike)."""
    command = options.get("command")
    if kind != "check" or not isinstance(command, list):
        return options
    return {**options, "command": [a.replace(EXPERIMENT_VARIABLE, str(experiment))
                                   if isinstance(a, str) else a for a in command]}


#: The sensor kinds a case may list in its own `checks:` (what reads its workspace).
CASE_CHECK_KINDS = ("file_exists", "file_matches", "check")


class CaseChecksOptions(Model):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class CaseChecksSensor:
    """Runs the case's own `checks:` (each a `file_exists`, `file_matches` or `check`, as
    skill-creator's evals list expectations per task): passes when every one passes; the score
    is the share that passed, the details name the first that did not. A case without checks
    has no verdict from it (n/a)."""

    name = "case_checks"

    def __init__(self, build: Any) -> None:
        self._build = build  # (kind, options, field) -> sensor: `ix.eval.sensors.build_sensor`
        self._built: dict[str, list[Any]] = {}

    def _checks(self, case: Any) -> list[Any]:
        key = str(getattr(case, "id", ""))
        checks = self._built.get(key)
        if checks is None:
            checks = self._built[key] = [
                self._build(spec["kind"], {k: v for k, v in spec.items() if k != "kind"},
                            f"checks[{i}]")
                for i, spec in enumerate(getattr(case, "checks", ()) or ())]
        return checks

    async def sense(self, interaction: Interaction) -> list[Reading]:
        checks = self._checks(interaction.stimulus)
        if not checks:
            return [Reading(sensor_name=self.name, passed=None,
                            details="the case lists no checks")]
        readings: list[Reading] = []
        for sensor in checks:
            got = sensor.sense(interaction)
            if asyncio.iscoroutine(got):
                got = await got
            readings += got
        judged = [r for r in readings if r.passed is not None]
        if not judged:
            return [Reading(sensor_name=self.name, passed=None, details=readings[0].details)]
        failed = [r for r in judged if not r.passed]
        share = (len(judged) - len(failed)) / len(judged)
        details = (f"{len(judged)} check(s) passed" if not failed else
                   f"{len(failed)} of {len(judged)} failed; first: {failed[0].sensor_name}: "
                   f"{failed[0].details}")
        return [Reading(sensor_name=self.name, passed=not failed, score=share, details=details,
                        metrics={"checks": len(judged), "failed": len(failed)})]


def _score(stdout: str) -> float | None:
    """The `score` of a JSON object on the last line of `stdout`, if a finite number."""
    value = last_json_object(stdout).get("score")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if value == value and abs(value) != float("inf") else None


__all__ = [
    "CASE_CHECK_KINDS",
    "EXPERIMENT_VARIABLE",
    "CaseChecksOptions",
    "CaseChecksSensor",
    "CheckOptions",
    "CheckSensor",
    "FileExistsOptions",
    "FileExistsSensor",
    "FileMatchesOptions",
    "FileMatchesSensor",
    "compiled",
    "matching_files",
    "with_experiment",
]
