"""Deferred imports of heavy third-party modules: the one place ix is lazy about imports.

numpy, scipy, duckdb, jinja2, httpx, the model SDKs and ray cost 0.1-2 s to import, and most
commands need none of them. A module names such an edge at its top with `lazy("scipy.special")`
and uses it as the module; the import happens at the first attribute use. `preload` starts
those imports in a background thread where the wait can overlap with other work (trials
running, a DuckDB query); a first use through `lazy` meanwhile waits for that import instead
of racing it, and so does an ordinary `import` after the result's `join()` (two threads
importing one package at once can see it half-initialised).
ix's own modules are imported at module top, never through here.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import sys
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["Loading", "in_background", "lazy", "preload"]

_lock = threading.Lock()
_preloading: dict[str, threading.Event] = {}  # set once the background import of it ended
_running: set[threading.Event] = set()  # one per background thread not yet ended
SETTLE_S = 10.0  # the longest exit waits for them


def _import(name: str) -> ModuleType:
    """`name`, imported; first waiting for a background `preload` of it, if one runs."""
    with _lock:
        done = _preloading.get(name)
    if done is not None:
        done.wait()
    return importlib.import_module(name)


class LazyModule(ModuleType):
    """A stand-in for the module `name` that imports it at the first attribute use."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__dict__["_ix_module"] = None

    def _ix_load(self) -> ModuleType:
        module: ModuleType | None = self.__dict__["_ix_module"]
        if module is None:
            module = _import(self.__name__)
            self.__dict__["_ix_module"] = module
        return module

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._ix_load(), attr)
        self.__dict__[attr] = value  # the next use is a plain module attribute lookup
        return value

    def __dir__(self) -> list[str]:
        return dir(self._ix_load())

    def __repr__(self) -> str:
        state = "imported" if self.__dict__["_ix_module"] is not None else "not imported yet"
        return f"<lazy module {self.__name__!r} ({state})>"


def lazy(name: str) -> Any:
    """The module `name`, imported at its first attribute use (typed `Any`: annotate with
    the real module under `TYPE_CHECKING` where the types matter)."""
    return LazyModule(name)


class Loading:
    """The imports a `preload` call asked for; `join` waits until each has ended."""

    def __init__(self, events: list[threading.Event]) -> None:
        self._events = events

    def join(self, timeout: float | None = None) -> None:
        """Wait until every module asked for is imported (or its import failed); an ordinary
        `import` of them after this cannot race the background thread."""
        for event in self._events:
            event.wait(timeout)

    def done(self) -> bool:
        return all(event.is_set() for event in self._events)


def preload(*names: str) -> Loading:
    """Import `names` in order in a daemon thread ("ix-preload"); a module already imported
    is skipped, one already being preloaded is waited for by the result's `join` but not
    imported twice. An import that fails here is ignored: the first real use raises it."""
    with _lock:
        events: list[threading.Event] = []
        todo: list[tuple[str, threading.Event]] = []
        for name in names:
            if name in _preloading:
                events.append(_preloading[name])
            elif name not in sys.modules:
                todo.append((name, threading.Event()))
                _preloading[name] = todo[-1][1]
                events.append(todo[-1][1])
    if todo:
        _start(lambda: _preload(todo), "ix-preload")
    return Loading(events)


def in_background(work: Callable[[], object], name: str = "ix-preload") -> Loading:
    """Run `work` once in a daemon thread (what a later step will need, built while the
    interpreter waits on something else: a run's trials); `join` the result before using
    what it builds. An exception is ignored here: the real use raises it."""

    def run() -> None:
        with contextlib.suppress(Exception):
            work()

    return Loading([_start(run, name)])


def _start(work: Callable[[], None], name: str) -> threading.Event:
    """Run `work` in a daemon thread that exit waits for (`_settle`); the event is set when
    it has ended."""
    done = threading.Event()

    def run() -> None:
        try:
            work()
        finally:
            with _lock:
                _running.discard(done)
            done.set()

    with _lock:
        _running.add(done)
    threading.Thread(target=run, daemon=True, name=name).start()
    return done


@atexit.register
def _settle() -> None:
    """At exit, wait (up to `SETTLE_S`) for the background imports and work still running. A
    daemon thread is not waited for by the interpreter, and one still importing a C extension
    while the interpreter tears down can crash it (SIGSEGV: `ix subjects test` failing at once
    on a missing API key while `anthropic` was still being preloaded)."""
    deadline = time.monotonic() + SETTLE_S
    with _lock:
        pending = list(_running)
    with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C: leave now
        for done in pending:
            done.wait(max(0.0, deadline - time.monotonic()))


def _preload(todo: list[tuple[str, threading.Event]]) -> None:
    for name, done in todo:
        try:
            importlib.import_module(name)
        except Exception:  # the first real use raises it
            pass
        finally:
            with _lock:
                del _preloading[name]
            done.set()
