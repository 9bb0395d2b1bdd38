"""`human`: a person is the subject (the human baseline of `003_…`, and manual exploration).

Each trial prints the case (its id, the prompt and the subject's skills) to stderr and reads
the answer from stdin, up to a line holding only `.` or the end of input. An answer whose
first line is `/skill NAME` or `skill: NAME` calls the Skill tool with NAME, so activation
experiments run with a human as they do with a model.

stdin is one stream: one daemon thread reads it for the whole process and trials wait for its
lines without blocking the event loop. A trial that times out leaves the lines it did not read
to the next one, and a read still blocked at the end never keeps the process from exiting.
"""

import asyncio
import contextlib
import re
import sys
import threading
import time
import weakref
from collections import deque
from typing import IO, Any

from pydantic import ConfigDict, Field

from ix.domain.errors import TrialError
from ix.domain.model import Model
from ix.domain.types import Subject
from ix.eval.models import EvalObservation, ToolCall
from ix.runtimes.registry import RuntimeContext, RuntimeKind, register

END_OF_ANSWER = "."
_SKILL = re.compile(r"^\s*(?:/skill\s+|skill:\s*)(\S+)\s*$", re.IGNORECASE)


class HumanOptions(Model):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    prompt_prefix: str = ""
    timeout_s: float | None = Field(None, gt=0)


class LineReader:
    """The lines of one text stream, read ahead by a daemon thread, awaited by any loop."""

    def __init__(self, stream: IO[str] | None):
        self.stream = stream
        self._lines: deque[str] = deque()
        self._eof = stream is None
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._mutex = threading.Lock()
        self._thread: threading.Thread | None = None
        self._turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = \
            weakref.WeakKeyDictionary()

    def turn(self) -> asyncio.Lock:
        """Held for a whole question and answer: one conversation on the stream at a time."""
        loop = asyncio.get_running_loop()
        lock = self._turns.get(loop)
        if lock is None:
            lock = self._turns[loop] = asyncio.Lock()
        return lock

    async def readline(self) -> str:
        """The next line with its newline, or "" at the end of the stream."""
        loop = asyncio.get_running_loop()
        while True:
            with self._mutex:
                if self._lines:
                    return self._lines.popleft()
                if self._eof:
                    return ""
                waiter: asyncio.Future[None] = loop.create_future()
                self._waiters.append((loop, waiter))
                if self._thread is None:
                    self._thread = threading.Thread(target=self._pump, name="ix-human-stdin",
                                                    daemon=True)
                    self._thread.start()
            await waiter

    def _pump(self) -> None:
        assert self.stream is not None
        while True:
            try:
                line = self.stream.readline()
            except (OSError, ValueError):  # closed or unreadable: as good as ended
                line = ""
            with self._mutex:
                if line:
                    self._lines.append(line)
                else:
                    self._eof = True
                waiters, self._waiters = self._waiters, []
            for loop, waiter in waiters:
                # a loop that has closed raises RuntimeError: nobody is waiting there any more
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(_wake, waiter)
            if not line:
                return


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


_stdin: LineReader | None = None


def stdin_reader() -> LineReader:
    """The process's reader of `sys.stdin` (a new one if `sys.stdin` was replaced)."""
    global _stdin
    if _stdin is None or _stdin.stream is not sys.stdin:
        _stdin = LineReader(sys.stdin)
    return _stdin


def parse_answer(lines: list[str]) -> tuple[str, tuple[ToolCall, ...]]:
    """The answer's text, and the Skill call its first line asks for, if it does."""
    text = "\n".join(lines).strip("\n")
    first = next((line for line in lines if line.strip()), "")
    match = _SKILL.match(first)
    calls = (ToolCall(name="Skill", input={"skill": match.group(1)}),) if match else ()
    return text, calls


class HumanRuntime:
    """Asks the person at the terminal; their answer is the observation."""

    def __init__(self, options: HumanOptions, context: RuntimeContext,
                 reader: LineReader | None = None, out: IO[str] | None = None):
        self.options = options
        self._reader = reader
        self._out = out

    async def invoke(
        self, subject: Subject, stimulus: Any, *, seed: int = 0, attempt: int = 0
    ) -> EvalObservation:
        reader = self._reader or stdin_reader()
        async with reader.turn():
            self._ask(subject, stimulus)
            t0 = time.perf_counter()
            if self.options.timeout_s is None:
                lines = await self._answer(reader)
            else:
                try:
                    lines = await asyncio.wait_for(self._answer(reader), self.options.timeout_s)
                except TimeoutError:
                    raise TrialError("timeout", f"no answer within the human runtime's "
                                     f"timeout_s={self.options.timeout_s:g}") from None
            duration_ms = int((time.perf_counter() - t0) * 1000)
        content, calls = parse_answer(lines)
        return EvalObservation(content=content, tool_calls=calls, duration_ms=duration_ms)

    async def _answer(self, reader: LineReader) -> list[str]:
        lines: list[str] = []
        while True:
            line = await reader.readline()
            if not line:
                if not lines:
                    raise TrialError("no_answer", "standard input ended before an answer "
                                     "(end of input)")
                return lines
            text = line.rstrip("\r\n")
            if text.strip() == END_OF_ANSWER:
                return lines
            lines.append(text)

    def _ask(self, subject: Subject, case: Any) -> None:
        out = self._out or sys.stderr  # looked up now: a progress display may wrap stderr
        parts = [f"\n──── case {getattr(case, 'id', '?')} · subject {subject.name} ────"]
        if self.options.prompt_prefix:
            parts.append(self.options.prompt_prefix.rstrip("\n"))
        parts.append(getattr(case, "prompt", str(case)))
        skills = subject.config.get("skills") or []
        if skills:
            parts.append("Available skills: " + ", ".join(s["name"] for s in skills))
            parts += [f"  {s['name']}: {s.get('description', '')}" for s in skills]
        parts.append(f"──── answer, then a line with a single '{END_OF_ANSWER}' "
                     "(first line '/skill NAME' to use a skill) ────")
        if out is None:
            return
        out.write("\n".join(parts) + "\n")
        out.flush()


register(RuntimeKind(
    name="human",
    options=HumanOptions,
    build=HumanRuntime,
    default_concurrency=1,
    summary="a person at the terminal: the case on stderr, the answer from stdin",
))
