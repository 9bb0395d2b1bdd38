"""`claude-code`: the real Claude Code CLI, headless, one isolated process per trial.

Per trial: a fresh temporary folder with a project that holds only the subject's skills
(`.claude/skills/<name>/`; a case with a workspace is the project instead, DESIGN.md §10),
an empty `HOME` and an empty `TMPDIR`, then

    claude -p --output-format stream-json --verbose --no-session-persistence
           --setting-sources project --allowedTools Skill --max-turns 2 [--model M]

with the prompt on stdin (a case with a `history`: written first as a session transcript of
that HOME, and `--resume <its id>` added), run without a shell in its own process group, and
the environment
built from an allowlist: the CLI sees `PATH`, locale, proxy and certificate settings,
`ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` (and the `pass_env` names) from ix's
environment, the isolation switches (`CLAUDE_CODE_DISABLE_BUNDLED_SKILLS=1`, no telemetry,
no non-essential traffic) and the `env` option, nothing else. The folder is removed after
the trial, whatever happened; on cancel or timeout the whole process group is killed first.

The transcript is parsed by `claude_stream`; the observation holds the session's own tool
calls (denied ones too), the answer, tokens, cost and facts in `meta`, and `trace` holds the
raw NDJSON lines with any secret value replaced by `[REDACTED]`. A run stopped by
`--max-turns` is the intended short run, not an error; a failed API request is an error of
kind `api_error:<status>` unless a tool call had already been observed (see `_classify`).
"""

import asyncio
import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import tempfile
import time
import uuid
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from ix.domain.errors import ConfigError, TrialError
from ix.domain.model import Model
from ix.domain.types import Subject
from ix.domain.workspace import current_workspace
from ix.eval.models import EvalObservation, ToolCall, Turn
from ix.runtimes._conversation import anthropic_history, history_of
from ix.runtimes.claude_stream import StreamResult, parse_stream
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register

INSTALL_HINT = "pip install 'ix-lab[claude]'"
#: Skills the CLI lists on its own (built-in plugins), even with bundled skills disabled.
BUILTIN_PLUGIN_SKILLS = frozenset({"doctor", "plugin-authoring"})
#: Variables passed through from ix's environment (everything else is left out).
PASSTHROUGH_ENV = (
    "PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
)
#: Set for every trial (the `env` option can override each).
ISOLATION_ENV = {
    "CLAUDE_CODE_DISABLE_BUNDLED_SKILLS": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}
#: Credentials belong in the environment, never in experiment.yaml (copied to spec.yaml).
SECRET_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
_SECRETISH = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
REDACTED = "[REDACTED]"
STDERR_TAIL = 1500
KILL_GRACE_S = 5.0


SettingSource = Literal["user", "project", "local"]


def _project_only() -> list[SettingSource]:
    return ["project"]


#: What `task: true` lets a session do unless `max_turns` / `allowed_tools` say otherwise: a
#: task in its workspace (DESIGN.md §10), where the activation probe allows two turns and the
#: Skill tool only.
TASK_MAX_TURNS = 30
TASK_TOOLS = ("Skill", "Read", "Write", "Edit", "Glob", "Grep", "Bash")


class ClaudeCodeOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    model: str | None = None
    #: a task, not an activation probe: `max_turns` and `allowed_tools` default to
    #: `TASK_MAX_TURNS` and `TASK_TOOLS`
    task: bool = False
    max_turns: int = Field(2, ge=1, le=1000)
    allowed_tools: list[str] = Field(default_factory=lambda: ["Skill"])

    @model_validator(mode="before")
    @classmethod
    def _task_defaults(cls, data: Any) -> Any:
        """`task: true` lifts the activation probe's defaults (what is given stays)."""
        if isinstance(data, Mapping) and data.get("task") is True:
            data = {"max_turns": TASK_MAX_TURNS, "allowed_tools": list(TASK_TOOLS), **data}
        return data
    cli_path: str | None = None
    setting_sources: list[SettingSource] = Field(default_factory=_project_only)
    env: dict[str, str] = Field(default_factory=dict)
    pass_env: list[str] = Field(default_factory=list)
    disable_slash_commands: bool = False
    extra_args: list[str] = Field(default_factory=list)

    @field_validator("env", mode="before")
    @classmethod
    def _as_text(cls, env: Any) -> Any:
        """Numbers become their text (`CLAUDE_CODE_MAX_RETRIES: 1`); other values are errors."""
        if not isinstance(env, Mapping):
            return env
        out = {}
        for key, value in env.items():
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise ValueError(f"{key}: a value must be a string or a number, "
                                 f"got {value!r}")
            out[key] = value if isinstance(value, str) else str(value)
        return out

    @field_validator("env")
    @classmethod
    def _no_secrets(cls, env: dict[str, str]) -> dict[str, str]:
        for key in env:
            if key in SECRET_ENV:
                raise ValueError(f"{key} must come from ix's environment, not experiment.yaml "
                                 "(the resolved options are saved with each run)")
            if not key or "=" in key or "\0" in key:
                raise ValueError(f"{key!r} is not a valid environment variable name")
        return env

    @field_validator("pass_env")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name or "=" in name or "\0" in name:
                raise ValueError(f"{name!r} is not a valid environment variable name")
        return names

    @field_validator("allowed_tools")
    @classmethod
    def _rules(cls, rules: list[str]) -> list[str]:
        for rule in rules:
            if not rule.strip():
                raise ValueError("a permission rule cannot be empty")
        return rules


def find_cli(cli_path: str | None = None) -> Path:
    """The `claude` executable: `cli_path`, else the one in `claude-agent-sdk`, else PATH."""
    if cli_path is not None:
        p = Path(cli_path).expanduser()
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise ConfigError(f"{p} is not an executable file", field="runtime.cli_path")
        return p
    spec = importlib.util.find_spec("claude_agent_sdk")  # locates, does not import
    if spec is not None and spec.origin:
        bundled = Path(spec.origin).parent / "_bundled" / "claude"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return bundled
    found = shutil.which("claude")
    if found:
        return Path(found)
    raise ConfigError("the Claude Code CLI was not found (neither the one bundled with "
                      f"claude-agent-sdk nor `claude` on PATH); {INSTALL_HINT}, or set "
                      "runtime option cli_path", field="runtime")


def _write_session(history: Sequence[Turn], project: Path, home: Path) -> str:
    """The case's history as a session transcript of the trial's HOME, where `--resume`
    finds it (`~/.claude/projects/<project path, non-alphanumerics as '-'>/<id>.jsonl`): one
    line per message, chained by `parentUuid`, tool calls as `tool_use` blocks answered by
    `tool_result` blocks. Returns the session id."""
    session = str(uuid.uuid4())
    folder = home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project))
    folder.mkdir(parents=True, exist_ok=True)
    lines, parent = [], None
    for i, m in enumerate(anthropic_history(history)):
        message = m if m["role"] == "user" else {
            "id": f"msg_ix_{i}", "type": "message", "role": "assistant", "model": "ix-history",
            "content": m["content"], "stop_sequence": None,
            "stop_reason": ("tool_use" if any(b["type"] == "tool_use" for b in m["content"])
                            else "end_turn"),
            "usage": {"input_tokens": 0, "output_tokens": 0}}
        line_id = str(uuid.uuid4())
        lines.append({"parentUuid": parent, "isSidechain": False, "type": m["role"],
                      "message": message, "uuid": line_id, "timestamp": _HISTORY_TIME,
                      "userType": "external", "cwd": str(project), "sessionId": session})
        parent = line_id
    (folder / f"{session}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines),
                                             encoding="utf-8")
    return session


#: The time written on a history's transcript lines (the CLI wants one; none is true).
_HISTORY_TIME = "2000-01-01T00:00:00.000Z"


class ClaudeCodeRuntime:
    """Runs each trial's prompt through a fresh, isolated headless Claude Code session."""

    def __init__(self, options: ClaudeCodeOptions, context: RuntimeContext):
        self.options = options
        self.cli = find_cli(options.cli_path)
        self._warned: set[str] = set()

    # --- the command ------------------------------------------------------------------------

    def argv(self, resume: str | None = None) -> list[str]:
        """The command line; `resume`: the id of the session transcript that holds the
        case's history (`_write_session`)."""
        o = self.options
        argv = [str(self.cli), "-p", "--output-format", "stream-json", "--verbose",
                "--no-session-persistence", "--max-turns", str(o.max_turns)]
        if resume is not None:
            argv += ["--resume", resume]
        argv += (["--setting-sources", ",".join(o.setting_sources)] if o.setting_sources
                 else ["--setting-sources="])
        if o.allowed_tools:
            argv += ["--allowedTools", ",".join(o.allowed_tools)]
        if o.model:
            argv += ["--model", o.model]
        if o.disable_slash_commands:
            argv.append("--disable-slash-commands")
        argv += o.extra_args
        return argv

    def environment(self, home: Path, tmp: Path | None = None) -> dict[str, str]:
        """The CLI's environment: the allowlist, an empty HOME (and TMPDIR), then `env`."""
        names = (*PASSTHROUGH_ENV, *self.options.pass_env)
        env = {k: os.environ[k] for k in names if k in os.environ}
        env["HOME"] = str(home)
        if tmp is not None:  # the CLI leaves probes and sockets in its TMPDIR
            env["TMPDIR"] = str(tmp)
        env.update(ISOLATION_ENV)
        env.update(self.options.env)
        return env

    def secrets(self, env: Mapping[str, str]) -> list[str]:
        """Values never to write anywhere: credentials and secret-looking `env` options."""
        values = [os.environ.get(k, "") for k in SECRET_ENV] + [env.get(k, "") for k in SECRET_ENV]
        values += [env.get(k, "") for k in (*self.options.env, *self.options.pass_env)
                   if _SECRETISH.search(k)]
        # longest first, so a secret that contains another is replaced whole
        return sorted({v for v in values if len(v) >= 6}, key=len, reverse=True)

    # --- a trial ----------------------------------------------------------------------------

    async def invoke(
        self, subject: Subject, stimulus: Any, *, seed: int = 0, attempt: int = 0
    ) -> EvalObservation:
        skills = _subject_skills(subject)
        # in its case's workspace, when it has one: the project, where the engine installed
        # the subject's skills already (DESIGN.md §10); else a project of its own
        workspace = current_workspace()
        root = Path(tempfile.mkdtemp(prefix="ix-claude-"))
        try:
            project, home, tmp = workspace or root / "project", root / "home", root / "tmp"
            for d in (home, tmp) if workspace else (project, home, tmp):
                d.mkdir()
            for name, skill_file in skills if workspace is None else ():
                _install_skill(name, skill_file, project / ".claude" / "skills" / name)
            env = self.environment(home, tmp)
            if not any(env.get(k) for k in (*SECRET_ENV, "CLAUDE_CODE_USE_BEDROCK",
                                            "CLAUDE_CODE_USE_VERTEX")):
                raise TrialError("missing_api_key", "claude-code: set ANTHROPIC_API_KEY in the "
                                 "environment (each trial runs with an empty HOME, so a "
                                 "login stored there is not used)")
            secrets = self.secrets(env)
            history = history_of(stimulus)
            session = _write_session(history, project, home) if history else None
            t0 = time.perf_counter()
            code, stdout, stderr = await _run(self.argv(session), project, env,
                                              str(stimulus.prompt).encode("utf-8"))
            wall_ms = int((time.perf_counter() - t0) * 1000)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        trace = [_redact(line, secrets) for line in
                 stdout.decode("utf-8", "replace").splitlines() if line.strip()]
        parsed = parse_stream(trace)
        err_text = _redact(stderr.decode("utf-8", "replace"), secrets)
        return self._observation(subject, [n for n, _ in skills], parsed, code, err_text,
                                 trace, wall_ms)

    def _observation(self, subject: Subject, skill_names: Sequence[str], parsed: StreamResult,
                     code: int, stderr: str, trace: list[str], wall_ms: int) -> EvalObservation:
        mismatch = self._check_skills(subject, skill_names, parsed.init_skills)
        return stream_observation(parsed, code, stderr, trace, wall_ms,
                                  {"skills_mismatch": mismatch} if mismatch else None)

    def _check_skills(self, subject: Subject, expected: Sequence[str],
                      seen: Sequence[str] | None) -> dict[str, list[str]] | None:
        """The manipulation check: did the model see exactly the subject's skills?"""
        if seen is None:
            return None
        missing = sorted(set(expected) - set(seen))
        unexpected = sorted(set(seen) - set(expected) - BUILTIN_PLUGIN_SKILLS)
        if not missing and not unexpected:
            return None
        if subject.name not in self._warned:
            self._warned.add(subject.name)
            warnings.warn(
                f"claude-code: subject {subject.name!r}: the CLI listed other skills than the "
                f"subject's (missing: {', '.join(missing) or 'none'}; unexpected: "
                f"{', '.join(unexpected) or 'none'}); see meta.skills_mismatch",
                RuntimeWarning, stacklevel=2)
        return {"missing": missing, "unexpected": unexpected}


def stream_observation(parsed: StreamResult, code: int, stderr: str, trace: list[str],
                       wall_ms: int, extra: Mapping[str, Any] | None = None) -> EvalObservation:
    """The observation of a Claude Code transcript (`claude-code`, and `agent-cli`'s `claude`
    profile): the session's own tool calls, the answer, tokens, cost, and facts in `meta`
    (`extra` added to them); raises the trial's error if the run failed (`_classify`)."""
    meta: dict[str, Any] = {
        "init_skills": list(parsed.init_skills) if parsed.init_skills is not None else None,
        "skills_invoked": list(parsed.skills_invoked),
        "denied": [d.as_dict() for d in parsed.denied],
        "first_tool": parsed.first_tool,
        "num_turns": parsed.num_turns,
        "is_error": parsed.is_error,
        "subtype": parsed.subtype,
        "terminal_reason": parsed.terminal_reason,
        "model": parsed.model,
        "claude_code_version": parsed.claude_code_version,
        "exit_code": code,
        "tokens_cache_read": parsed.tokens_cache_read,
        "tokens_cache_creation": parsed.tokens_cache_creation,
        "wall_ms": wall_ms,
    }
    if parsed.api_retries:
        meta["api_retries"] = [r.as_dict() for r in parsed.api_retries]
    if parsed.bad_lines:
        meta["bad_lines"] = parsed.bad_lines
    meta.update(extra or {})
    _classify(parsed, code, stderr, meta)
    return EvalObservation(
        content=parsed.text,
        tool_calls=tuple(ToolCall(name=t.name, input=t.input) for t in parsed.tool_uses),
        duration_ms=parsed.duration_ms or wall_ms,
        tokens_input=parsed.tokens_input_total,
        tokens_output=parsed.tokens_output,
        cost_usd=parsed.cost_usd,
        meta=meta,
        trace=trace,
    )


def _classify(parsed: StreamResult, code: int, stderr: str, meta: dict[str, Any]) -> None:
    """Raise the trial's error, if the run failed; a run stopped at a limit did not.

    A failed API request (after the CLI's own retries) is `api_error:<status>`, unless a tool
    call was already observed: the first choice is then complete, and dropping the trial would
    bias activation downwards (a session that called a tool makes more requests, so it meets
    more failures). That case is kept as an observation with `meta.api_error`.
    """
    if not parsed.has_result:
        tail = stderr.strip()[-STDERR_TAIL:] or "no output on stderr"
        if code != 0:
            raise TrialError("cli_error", f"claude exited with code {code} and no result: {tail}")
        raise TrialError("no_result", f"claude printed no result line: {tail}")
    if not parsed.is_error:
        return
    if parsed.is_api_error:
        status = parsed.error_status
        message = parsed.text or (parsed.api_errors[-1].text if parsed.api_errors else "")
        if parsed.tool_uses:
            meta["api_error"] = {"status": status, "type": parsed.api_error_type,
                                 "message": message[:STDERR_TAIL]}
            return
        kind = f"api_error:{status}" if status is not None else "api_error"
        raise TrialError(kind, message or f"terminal_reason={parsed.terminal_reason}")
    if parsed.subtype in ("error_max_turns", "error_max_budget_usd"):
        return
    detail = "; ".join(parsed.errors) or parsed.text or stderr.strip()[-STDERR_TAIL:]
    raise TrialError(f"cli_{parsed.subtype or 'error'}", detail or "the CLI reported an error")


async def _run(argv: list[str], cwd: Path, env: dict[str, str],
               stdin: bytes) -> tuple[int, bytes, bytes]:
    """Run without a shell, in a new session; on cancel, kill the whole process group."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True)
    except OSError as exc:
        raise TrialError("cli_error", f"could not start {argv[0]}: {exc}") from exc
    try:
        stdout, stderr = await proc.communicate(stdin)
    except BaseException:
        _kill_group(proc.pid)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
        raise
    finally:
        _kill_group(proc.pid)  # what the CLI left running (background shells)
    return proc.returncode if proc.returncode is not None else -1, stdout, stderr


def _kill_group(pid: int) -> None:
    if hasattr(os, "killpg"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _subject_skills(subject: Subject) -> list[tuple[str, Path]]:
    out = []
    for entry in subject.config.get("skills") or ():
        if not isinstance(entry, Mapping) or not entry.get("name") or not entry.get("path"):
            raise TrialError("bad_skills", "claude-code: a subject skill must be a mapping "
                             f"with a name and the path of its SKILL.md, got {entry!r}")
        name = str(entry["name"])
        if "/" in name or "\\" in name or name in (".", ".."):
            raise TrialError("bad_skills", f"claude-code: invalid skill name {name!r}")
        out.append((name, Path(str(entry["path"]))))
    return out


#: What is copied of a skill whose SKILL.md does not sit in a folder of its own name.
_SKILL_PARTS = ("scripts", "references", "assets")


def _install_skill(name: str, skill_file: Path, dest: Path) -> None:
    """Copy a skill into the project: its whole folder when that folder is the skill's
    (`<name>/SKILL.md`), else only SKILL.md and its standard `scripts/`, `references/`,
    `assets/` (the folder may be an experiment's, with results and other files)."""
    if not skill_file.is_file():
        raise TrialError("bad_skills", f"claude-code: {skill_file} does not exist")
    try:
        _copy_skill(name, skill_file, dest)
    except OSError as exc:
        raise TrialError("bad_skills", f"claude-code: could not copy skill {name!r} from "
                         f"{skill_file.parent}: {exc}") from exc


def _copy_skill(name: str, skill_file: Path, dest: Path) -> None:
    src = skill_file.parent
    if src.name == name:
        shutil.copytree(src, dest, symlinks=True,
                        ignore=shutil.ignore_patterns(".git", "__pycache__", "node_modules"))
        if skill_file.name != "SKILL.md":
            shutil.copyfile(skill_file, dest / "SKILL.md")
        return
    dest.mkdir(parents=True)
    shutil.copyfile(skill_file, dest / "SKILL.md")
    for part in _SKILL_PARTS:
        if (src / part).is_dir():
            shutil.copytree(src / part, dest / part, symlinks=True)


def _redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


register(RuntimeKind(
    name="claude-code",
    history="sent",
    spends_tokens=True,
    options=ClaudeCodeOptions,
    build=ClaudeCodeRuntime,
    default_concurrency=4,
    summary="the real Claude Code CLI, headless, one isolated project and HOME per trial",
))
