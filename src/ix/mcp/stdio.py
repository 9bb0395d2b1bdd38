"""The stdio transport of `ix mcp`: the SDK's, with ix's own reader of stdin.

The SDK drops a line that is not a valid JSON-RPC message without a word and reads stdin in
a worker thread that a shutdown must wait for (until the client writes or closes stdin).
So ix reads stdin itself: in a daemon thread that a shutdown leaves behind, checking each
line as JSON-RPC 2.0 says, answering a malformed one with the error object the spec defines
(-32700 parse error, -32600 invalid request) and passing the others on. The SDK still owns
stdout (it points file descriptor 1 at stderr while serving) and answers the rest (-32601
method not found, -32602 invalid params).
"""

import contextlib
import json
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import BaseModel, ValidationError

#: Bytes read from stdin at a time.
CHUNK = 1 << 16


def check(line: bytes) -> str | types.JSONRPCError | None:
    """One line of stdin: the message to pass on (text), the error to answer, or None for a
    blank line (ignored)."""
    if not line.strip():
        return None
    try:
        data = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return _error(None, types.PARSE_ERROR, "Parse error", f"not JSON: {_short(str(exc))}")
    if isinstance(data, list):
        why = ("an empty batch" if not data else
               "batches are not supported (MCP removed JSON-RPC batching in 2025-06-18): "
               "send each message on its own line")
        return _error(None, types.INVALID_REQUEST, "Invalid Request", why)
    if not isinstance(data, dict):
        return _error(None, types.INVALID_REQUEST, "Invalid Request",
                      f"a message is a JSON object, not {_json(data)}")
    ident = data.get("id")
    valid_id = isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))
    answer_id = ident if valid_id else None
    if data.get("jsonrpc") != "2.0":
        return _error(answer_id, types.INVALID_REQUEST, "Invalid Request",
                      f'"jsonrpc" must be "2.0", not {_json(data.get("jsonrpc"))}')
    if "id" in data and not valid_id:
        return _error(None, types.INVALID_REQUEST, "Invalid Request",
                      f'"id" must be a string or an integer, not {_json(ident)}')
    if "method" in data:
        if not isinstance(data["method"], str):
            return _error(answer_id, types.INVALID_REQUEST, "Invalid Request",
                          f'"method" must be a string, not {_json(data["method"])}')
        model: type[BaseModel] = (types.JSONRPCRequest if "id" in data
                                  else types.JSONRPCNotification)
    elif "error" in data:
        model = types.JSONRPCError
    elif "result" in data:
        model = types.JSONRPCResponse
    else:
        return _error(answer_id, types.INVALID_REQUEST, "Invalid Request",
                      'no "method" (and not a response: no "result" or "error")')
    try:
        model.model_validate(data, by_name=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "message"
        return _error(answer_id, types.INVALID_REQUEST, "Invalid Request",
                      f'"{where}": {first["msg"]}')
    return line.decode("utf-8")


def _error(ident: str | int | None, code: int, message: str, data: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=ident,
                              error=types.ErrorData(code=code, message=message, data=data))


def _json(value: Any) -> str:
    """A JSON value as the sender wrote it, shortened: null, true, "1.0", 1.5, an array..."""
    if isinstance(value, dict | list):
        return "an object" if isinstance(value, dict) else "an array"
    return _short(json.dumps(value, ensure_ascii=False))


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Lines:
    """stdin's lines, checked: an async iterator of the valid ones (what the SDK's stdio
    transport reads), answering the others on `reply` once it is set."""

    def __init__(self, receive: MemoryObjectReceiveStream[bytes]):
        self.receive = receive
        self.reply: Any = None  # the transport's write stream
        self.ready = anyio.Event()

    def answer_on(self, write: Any) -> None:
        self.reply = write
        self.ready.set()

    def __aiter__(self) -> "_Lines":
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                line = await self.receive.receive()
            except anyio.EndOfStream:
                raise StopAsyncIteration from None
            found = check(line)
            if isinstance(found, str):
                return found
            if found is not None:
                said = _short(repr(line.decode("utf-8", "replace")))
                print(f"ix mcp: warning: answered a malformed message with {found.error.code} "
                      f"({found.error.data}): {said}", file=sys.stderr, flush=True)
                await self.ready.wait()
                with contextlib.suppress(anyio.ClosedResourceError,
                                         anyio.BrokenResourceError):
                    await self.reply.send(SessionMessage(found))


def _claim_stdin() -> tuple[int | None, Callable[[], None]]:
    """A private copy of file descriptor 0 for the protocol, fd 0 pointed at the null device
    meanwhile (a subject's process must not read the client's messages); and the undo."""
    try:
        if sys.platform == "win32":  # pragma: no cover
            wire = os.dup(0)
        else:
            import fcntl

            wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:  # no stdin at all: the client is gone
        return None, lambda: None
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)

    def restore() -> None:  # the copy stays open: the reader thread may be blocked on it
        os.dup2(wire, 0)

    return wire, restore


def _read(wire: int | None, send: MemoryObjectSendStream[bytes],
          token: anyio.lowlevel.EventLoopToken) -> None:
    """The reader thread: stdin's lines handed to the loop, one at a time, until EOF or the
    loop is gone. A daemon thread, so a shutdown does not wait for the client to write."""
    pending: list[bytes] = []  # the start of a line not ended yet
    try:
        while wire is not None:
            chunk = os.read(wire, CHUNK)
            if not chunk:
                break
            *ended, rest = chunk.split(b"\n")
            for line in ended:
                anyio.from_thread.run(send.send, b"".join([*pending, line]), token=token)
                pending = []
            pending.append(rest)
        if any(pending):
            anyio.from_thread.run(send.send, b"".join(pending), token=token)
    except Exception:  # the loop is gone, or the stream closed: stop reading
        pass
    finally:
        with contextlib.suppress(Exception):
            anyio.from_thread.run_sync(send.close, token=token)


@asynccontextmanager
async def stdio_transport() -> AsyncIterator[tuple[Any, Any]]:
    """The read and write streams of the protocol on this process's stdin and stdout."""
    wire, restore = _claim_stdin()
    send, receive = anyio.create_memory_object_stream[bytes](0)
    lines = _Lines(receive)
    threading.Thread(target=_read, args=(wire, send, anyio.lowlevel.current_token()),
                     name="ix-mcp-stdin", daemon=True).start()
    try:
        async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
            lines.answer_on(write)
            yield read, write
    finally:
        receive.close()
        restore()
