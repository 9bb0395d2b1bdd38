"""`ix view`'s web application: `create_app(lab)` gives a read-only Starlette app over the lab.

Every response carries a strict Content-Security-Policy (no script at all, styles and images
from the app itself), `X-Content-Type-Options: nosniff` and no-referrer; only GET and HEAD
are served; the Host header must name the address the app was started for (a guard against
DNS rebinding). The pages are in `ix.view.pages`; they read the lab through `ix.api` only.
"""

import logging
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ix.report.tables import hanging
from ix.view import pages
from ix.view.page_data import Lookup, NotFound

CSP = ("default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; "
       "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
       "form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}
#: Host names that always reach a viewer bound to a loopback address.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
METHODS = ("GET", "HEAD")

log = logging.getLogger("ix.view")


class Guard:
    """Outermost layer: refuses methods other than GET/HEAD, adds the security headers to
    every response, and turns an unexpected error into a plain 500 (no traceback shown)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] not in METHODS:
            refused = PlainTextResponse("ix view only reads: GET and HEAD are allowed\n", 405,
                                        headers={"Allow": ", ".join(METHODS),
                                                 **SECURITY_HEADERS})
            await refused(scope, receive, send)
            return
        started = False

        async def send_secured(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
            await send(message)

        try:
            await self.app(scope, receive, send_secured)
        except Exception:
            log.exception("ix view: error serving %s", scope.get("path"))
            if not started:
                failed = PlainTextResponse("ix view: internal error (see the terminal)\n", 500)
                await failed(scope, receive, send_secured)


def _error_page(request: Request, status: int, message: str) -> Response:
    html = pages.render("error.html", status=status, message=message)
    return HTMLResponse(html, status_code=status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        return PlainTextResponse("ix view only reads: GET and HEAD are allowed\n", 405,
                                 headers={"Allow": ", ".join(METHODS)})
    text = {404: "Nothing here.", 400: "Bad request."}.get(exc.status_code, "Error.")
    detail = exc.detail if isinstance(exc.detail, str) and exc.status_code == 400 else text
    return _error_page(request, exc.status_code, detail)


async def _not_found(request: Request, exc: Exception) -> Response:
    return _error_page(request, 404, str(exc) or "Nothing here.")


def create_app(lab: Path, *, hosts: Sequence[str] | None = None) -> Starlette:
    """The viewer over `lab` (an existing lab folder). `hosts`: the Host header values
    accepted (default: the loopback names; `["*"]` accepts any)."""
    lookup = Lookup(lab, warn=_warn)
    routes = [
        Route("/", pages.experiments, methods=["GET"]),
        Route("/runs/{run}", pages.run_page, methods=["GET"]),
        Route("/runs/{run}/trials", pages.trials_page, methods=["GET"]),
        Route("/runs/{run}/trial", pages.trial_page, methods=["GET"]),
        Route("/runs/{run}/trace", pages.trace_page, methods=["GET"]),
        Route("/runs/{run}/output", pages.output_file, methods=["GET"]),
        Route("/compare", pages.compare_page, methods=["GET"]),
        Route("/optimize/{session}", pages.optimize_page, methods=["GET"]),
        Route("/static/{name}", pages.static, methods=["GET"]),
        Route("/favicon.ico", pages.favicon, methods=["GET"]),
    ]
    handlers: dict[Any, Any] = {HTTPException: _http_error, NotFound: _not_found}
    app = Starlette(routes=routes, exception_handlers=handlers, middleware=[
        Middleware(Guard),
        Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts or LOCAL_HOSTS)),
    ])
    app.state.lookup = lookup
    return app


def _warn(message: str) -> None:
    """A warning on stderr, wrapped as the command line's are (`COLUMNS`, else the
    terminal's width, else 80)."""
    lines = hanging(f"ix view: warning: {message}", shutil.get_terminal_size().columns,
                    keep=len("ix view: warning:"))
    print("\n".join(lines), file=sys.stderr, flush=True)


__all__ = ["CSP", "LOCAL_HOSTS", "SECURITY_HEADERS", "create_app"]
