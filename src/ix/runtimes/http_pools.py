"""The `http` runtime's connections: small pools, so that many requests in flight stay cheap.

httpcore walks every connection of a pool each time a request starts or ends (and asks each
idle one whether its socket is readable), and closes idle connections whenever a pool holds
more than its keep-alive limit: with tens of requests in flight — a load test
(`ix.engine.load_test`) — one large pool costs milliseconds of CPU per request and reopens
connections all the time, which the event loop then spends instead of sending on time. Here
each pool (one `httpx.AsyncClient`) holds at most `PER_POOL` connections, all kept alive; a
request takes the first pool with room, and a new pool is made when all are full. At the
default concurrency (16) that is a handful of pools; at 200 requests/s of 100 ms, a few more.
The pools share one TLS context (loading the CA bundle once) and are closed together.
"""

from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Any, Protocol

from ix._lazy import lazy

if TYPE_CHECKING:
    import httpx
else:
    httpx = lazy("httpx")

#: Connections (and requests in flight) per pool.
PER_POOL = 4


class Pools:
    """`httpx.AsyncClient`s of at most `PER_POOL` requests in flight each."""

    def __init__(self, make: Callable[..., "httpx.AsyncClient"]) -> None:
        self._make = make
        self._tls: Any = None
        self.clients: list[httpx.AsyncClient] = []
        self._busy: list[int] = []

    def take(self) -> int:
        """A pool with room for one more request (its index); `give` it back after."""
        busy = self._busy
        for i, n in enumerate(busy):
            if n < PER_POOL:
                busy[i] = n + 1
                return i
        if self._tls is None:
            self._tls = httpx.create_ssl_context()
        limits = httpx.Limits(max_connections=PER_POOL, max_keepalive_connections=PER_POOL)
        self.clients.append(self._make(verify=self._tls, limits=limits))
        busy.append(1)
        return len(busy) - 1

    def give(self, i: int) -> None:
        self._busy[i] -= 1

    async def aclose(self) -> None:
        clients, self.clients, self._busy = self.clients, [], []
        for client in clients:
            await client.aclose()


class Closes(Protocol):
    async def aclose(self) -> None: ...


async def close_at_loop_end(pools: Closes) -> AsyncGenerator[None, None]:
    """Parked on the running loop: `asyncio.run` closes it (and the pools, or a grpc runtime's
    channel) as the loop ends."""
    try:
        yield
    finally:
        await pools.aclose()
