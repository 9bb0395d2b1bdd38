"""Pausing a run: no new trial starts, the trials in flight finish, the run stays open.

The run's `paused` marker (`ix.store.pausing`) says whether it is paused: `ix pause RUN` puts
it from another process, SIGTSTP (Ctrl-Z) to `ix run` puts it from inside, `ix continue RUN`
and SIGCONT remove it. `PauseGate` watches the marker (a stat every `POLL_S`, not one per
trial) and is the orchestrator's `gate`: while paused, a worker that finished its trial waits
there instead of taking the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path

from ix.store.pausing import is_paused, mark_paused, unmark_paused

#: How often the marker is looked at (seconds): how long `ix pause` takes to be obeyed.
POLL_S = 0.2

#: Told each change: True when the run pauses, False when it goes on.
OnPause = Callable[[bool], None]


class PauseGate:
    """The pause state of one run executing here (its folder `directory`)."""

    def __init__(self, directory: Path, on_pause: OnPause | None = None,
                 stopping: Callable[[], bool] | None = None):
        """`stopping`: asked at each look at the marker; True releases a paused run (a limit
        reached, `Limits.stop`), so that it can stop."""
        self.directory = directory
        self._on_pause = on_pause
        self._stopping = stopping
        self._going = asyncio.Event()
        self._going.set()
        self._released = False
        self._watch: asyncio.Task[None] | None = None

    @property
    def paused(self) -> bool:
        return not self._going.is_set()

    def gate(self) -> Awaitable[object] | None:
        """None to go on; else what to await before taking the next trial."""
        return None if self._going.is_set() else self._going.wait()

    def start(self) -> None:
        """Forget a marker left by a run that ended paused without removing it (a crash),
        and watch for the next one."""
        with contextlib.suppress(OSError):
            unmark_paused(self.directory)
        self._watch = asyncio.get_running_loop().create_task(self._poll())

    def pause(self, by: str) -> None:
        """Pause from inside (a signal): the marker put, so `ix continue` sees it too."""
        with contextlib.suppress(OSError):
            mark_paused(self.directory, by)
        self._set(True)

    def resume(self) -> None:
        """Go on from inside (SIGCONT): the marker removed."""
        with contextlib.suppress(OSError):
            unmark_paused(self.directory)
        self._set(False)

    def release(self) -> None:
        """The run is stopping (Ctrl-C, a limit): never wait again, so the workers see it."""
        self._released = True
        self._set(False)

    def close(self) -> None:
        """The run ended: stop watching and remove the marker."""
        if self._watch is not None:
            self._watch.cancel()
        with contextlib.suppress(OSError):
            unmark_paused(self.directory)

    def _set(self, paused: bool) -> None:
        paused = paused and not self._released
        if paused == self.paused:
            return
        if paused:
            self._going.clear()
        else:
            self._going.set()
        if self._on_pause is not None:
            self._on_pause(paused)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(POLL_S)
            if self._stopping is not None and self._stopping():
                self.release()
                return
            try:
                marked = is_paused(self.directory)
            except OSError:
                continue
            self._set(marked)
