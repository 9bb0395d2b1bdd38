"""Run the viewer with uvicorn: bind first (so `--port 0` can print the port it got), say
where it listens, then serve until Ctrl-C."""

import ipaddress
import logging
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import uvicorn

from ix.view.app import LOCAL_HOSTS, create_app
from ix.view.page_data import Lookup
from ix.view.pages import compile_templates

log = logging.getLogger("ix.view")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port); port 0 picks a free one."""
    infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def warm(lookup: Lookup) -> None:
    """Prepare the first pages in the background: what they read (`Lookup.prepare`), then
    their templates compiled."""
    try:
        lookup.prepare()
    except Exception:  # a broken lab shows its error on the page instead
        log.debug("ix view: preparing failed", exc_info=True)
    try:
        compile_templates()
    except Exception:  # the page that needs a broken template says so
        log.debug("ix view: compiling the templates failed", exc_info=True)


def serve(lab: Path, host: str, port: int,
          listening: Callable[[str], None], warn: Callable[[str], None]) -> None:
    """Serve the viewer over `lab` on host:port until interrupted; `listening` gets the URL
    once the socket is bound, `warn` what the user should know."""
    sock = bind(host, port)
    hosts = list(LOCAL_HOSTS) if is_loopback(host) else ["*"]
    if not is_loopback(host):
        warn(f"--host {host}: the viewer is reachable from other machines on your network. "
             "It has no login, and it shows everything in the lab (prompts, answers, "
             "traces); use it only on a network you trust, or keep the default 127.0.0.1.")
    app = create_app(lab, hosts=hosts)
    threading.Thread(target=warm, args=(app.state.lookup,), daemon=True,
                     name="ix-view-prepare").start()
    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False,
                            proxy_headers=False, lifespan="off")
    listening(url_of(sock))
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


__all__ = ["bind", "is_loopback", "serve", "url_of"]
