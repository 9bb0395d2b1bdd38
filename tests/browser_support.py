"""The browser of the browser tests: Debian's Chromium driven by Playwright, headless.

No browser is ever downloaded: the tests use the system's Chromium (`.ci/run` installs it
with apt); where it is missing they fail, saying how to install it — never a silent skip.

Fixtures:
- `chromium`: one headless Chromium per test module (Playwright's sync API keeps an event
  loop running while it is open, which other tests' `asyncio.run` must not meet).
- `watched_page`: a factory, `watched_page(allow=(...), width=1280, height=900)`, giving a
  `Watched` page in a fresh browser context that records console errors, page errors,
  dialogs (dismissed), every request and the failed ones (one that the page's
  Content-Security-Policy refuses fails with "csp" before it is routed); requests whose
  URL starts with none of the `allow` prefixes are aborted and listed in `blocked`.
  `Watched.screenshot(name)` saves a full-page PNG under the test's temporary directory.

A plugin module (tests/conftest.py names it in `pytest_plugins`) rather than a second
`conftest.py`, which would take the module name `conftest` from tests/conftest.py.
"""

import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported lazily below: the rest of the suite runs without playwright
    from playwright.sync_api import Browser, Dialog, Page, Route


CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@dataclass
class Watched:
    """A page and what happened on it."""

    page: "Page"
    shots: Path
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (url, why), e.g. "csp"
    blocked: list[str] = field(default_factory=list)

    def screenshot(self, name: str) -> Path:
        """A full-page PNG `<tmp_path>/screenshots/<name>.png`, for debugging. Not what a test
        asserts: when a loaded machine's Chromium cannot capture one ("Unable to capture
        screenshot"), a `.txt` beside it says so and the test goes on."""
        from playwright.sync_api import Error

        self.shots.mkdir(parents=True, exist_ok=True)
        path = self.shots / (re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".png")
        try:
            self.page.screenshot(path=str(path), full_page=True)
        except Error as exc:
            if "capture screenshot" not in str(exc):
                raise
            path = path.with_suffix(".txt")
            path.write_text(f"no screenshot: {exc}\n", encoding="utf-8")
        return path

    def quiet(self) -> bool:
        """No console error, no uncaught exception, no dialog, no failed or blocked request."""
        return not (self.console_errors or self.page_errors or self.dialogs or self.failed
                    or self.blocked)


@pytest.fixture(scope="module")  # per module: while open it holds an event loop
def chromium() -> Iterator["Browser"]:
    if not CHROMIUM.exists():
        pytest.fail(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set "
                    "CHROMIUM_PATH); browsers are never downloaded")
    from playwright import sync_api
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def watched_page(chromium: "Browser", tmp_path: Path) -> Iterator[Callable[..., Watched]]:
    contexts = []

    def make(allow: Sequence[str] = (), width: int = 1280, height: int = 900) -> Watched:
        context = chromium.new_context(viewport={"width": width, "height": height},
                                       service_workers="block")
        contexts.append(context)
        page = context.new_page()
        watched = Watched(page, tmp_path / "screenshots")

        def route(r: "Route") -> None:
            if r.request.url.startswith(tuple(allow)):
                r.continue_()
            else:
                watched.blocked.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page.on("console", lambda m: watched.console_errors.append(m.text)
                if m.type == "error" else None)
        page.on("pageerror", lambda e: watched.page_errors.append(str(e)))
        page.on("request", lambda r: watched.requests.append(r.url))
        page.on("requestfailed", lambda r: watched.failed.append((r.url, str(r.failure))))

        def dialog(d: "Dialog") -> None:
            watched.dialogs.append(f"{d.type}: {d.message}")
            d.dismiss()

        page.on("dialog", dialog)
        return watched

    yield make
    for context in contexts:
        context.close()
