"""The two providers' batch endpoints behind one interface (`ix.runtimes.batches`), through
their official SDKs: Anthropic's Message Batches and OpenAI's Batch API (a JSONL file of
Chat Completions requests). Control calls are retried like a trial's request (`with_retries`)."""

import io
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from ix.runtimes.batches import BatchResult
from ix.runtimes.transport import RetryOptions, Transient, status_error, with_retries

T = TypeVar("T")

#: a batch created more than this after its `submit` line was written is not ours
FIND_WINDOW = timedelta(minutes=10)


async def _sdk(sdk: Any, call: Callable[[], Awaitable[T]], options: RetryOptions,
               secret: str | None) -> T:
    """One control call (create, retrieve, results, cancel, list) with our retries, its
    SDK errors mapped to ours."""

    async def once() -> T:
        try:
            return await call()
        except sdk.APIStatusError as exc:
            raise status_error(exc.status_code, str(exc.message)[:500]) from None
        except (sdk.APITimeoutError, sdk.APIConnectionError) as exc:
            raise Transient("connection_error", str(exc)) from None

    return await with_retries(once, options, secrets=[secret])


class AnthropicBatches:
    """Message Batches: `POST /v1/messages/batches` with `{custom_id, params}` requests."""

    name = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * 1000 * 1000

    def __init__(self, sdk: Any, client: Any, options: RetryOptions, secret: str | None):
        self.sdk, self.client, self.options, self.secret = sdk, client, options, secret

    async def _call(self, call: Callable[[], Awaitable[T]]) -> T:
        return await _sdk(self.sdk, call, self.options, self.secret)

    async def create(self, requests: list[tuple[str, dict[str, Any]]], token: str) -> str:
        batches = self.client.messages.batches
        made = await self._call(lambda: batches.create(
            requests=[{"custom_id": cid, "params": body} for cid, body in requests]))
        return str(made.id)

    async def progress(self, batch_id: str) -> tuple[bool, int]:
        batch = await self._call(lambda: self.client.messages.batches.retrieve(batch_id))
        c = batch.request_counts
        return batch.processing_status == "ended", c.succeeded + c.errored + c.canceled + \
            c.expired

    async def results(self, batch_id: str) -> AsyncIterator[tuple[str, BatchResult]]:
        decoder = await self._call(lambda: self.client.messages.batches.results(batch_id))
        async for item in decoder:
            result = item.result
            kind = str(result.type)
            if kind == "succeeded":
                yield item.custom_id, BatchResult(
                    "succeeded", batch_id, body=result.message.model_dump(mode="json"))
            elif kind == "errored":
                inner = getattr(result.error, "error", None)
                yield item.custom_id, BatchResult(
                    "errored", batch_id, error_type=str(getattr(inner, "type", "error")),
                    message=str(getattr(inner, "message", ""))[:500])
            else:
                yield item.custom_id, BatchResult(kind, batch_id)  # type: ignore[arg-type]

    async def cancel(self, batch_id: str) -> None:
        await self._call(lambda: self.client.messages.batches.cancel(batch_id))

    async def find(self, token: str, at: datetime, requests: int) -> str | None:
        """The batch created after `at` with `requests` requests (a Message Batch carries
        no metadata of ours): the nearest in time, if any."""
        page = await self._call(lambda: self.client.messages.batches.list(limit=100))
        best: tuple[timedelta, str] | None = None
        async for batch in page:
            created = batch.created_at
            counts = batch.request_counts
            total = (counts.processing + counts.succeeded + counts.errored + counts.canceled
                     + counts.expired)
            gap = created - at
            if total == requests and timedelta(seconds=-5) <= gap <= FIND_WINDOW \
                    and (best is None or gap < best[0]):
                best = (gap, str(batch.id))
            if created < at - timedelta(minutes=1):
                break  # listed newest first
        return best[1] if best else None


class OpenAIBatches:
    """The Batch API: a JSONL file of `/v1/chat/completions` requests, then a batch of it."""

    name = "openai"
    max_requests = 50_000
    max_bytes = 200 * 1000 * 1000
    ENDED = frozenset({"completed", "failed", "expired", "cancelled"})

    def __init__(self, sdk: Any, client: Any, options: RetryOptions, secret: str | None):
        self.sdk, self.client, self.options, self.secret = sdk, client, options, secret
        self._failed: dict[str, str] = {}   # batch id -> why the whole batch failed

    async def _call(self, call: Callable[[], Awaitable[T]]) -> T:
        return await _sdk(self.sdk, call, self.options, self.secret)

    async def create(self, requests: list[tuple[str, dict[str, Any]]], token: str) -> str:
        lines = "".join(json.dumps({"custom_id": cid, "method": "POST",
                                    "url": "/v1/chat/completions", "body": body},
                                   ensure_ascii=False) + "\n" for cid, body in requests)
        data = lines.encode()
        uploaded = await self._call(lambda: self.client.files.create(
            file=("ix-batch.jsonl", io.BytesIO(data), "application/jsonl"), purpose="batch"))
        made = await self._call(lambda: self.client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions",
            completion_window="24h", metadata={"ix_token": token}))
        return str(made.id)

    async def progress(self, batch_id: str) -> tuple[bool, int]:
        batch = await self._call(lambda: self.client.batches.retrieve(batch_id))
        if batch.status == "failed":
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            self._failed[batch_id] = "; ".join(
                f"{e.code}: {e.message}" for e in errors) or "the batch failed"
        counts = batch.request_counts
        done = (counts.completed + counts.failed) if counts is not None else 0
        return batch.status in self.ENDED, done

    async def results(self, batch_id: str) -> AsyncIterator[tuple[str, BatchResult]]:
        batch = await self._call(lambda: self.client.batches.retrieve(batch_id))
        if batch_id in self._failed:  # rejected as a whole (validation): every request
            for line in await self._lines(batch.input_file_id):
                yield str(line.get("custom_id")), BatchResult(
                    "errored", batch_id, error_type="batch_failed",
                    message=self._failed[batch_id][:500])
            return
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            for line in await self._lines(file_id):
                yield str(line.get("custom_id")), self._result(line, batch_id)

    async def _lines(self, file_id: str) -> list[dict[str, Any]]:
        content = await self._call(lambda: self.client.files.content(file_id))
        return [json.loads(raw) for raw in content.text.splitlines() if raw.strip()]

    @staticmethod
    def _result(line: dict[str, Any], batch_id: str) -> BatchResult:
        response = line.get("response") or {}
        error = line.get("error") or {}
        if response.get("status_code") == 200 and not error:
            return BatchResult("succeeded", batch_id, body=response.get("body") or {})
        code = str(error.get("code") or "")
        if code == "batch_expired":
            return BatchResult("expired", batch_id)
        if code == "batch_cancelled":
            return BatchResult("canceled", batch_id)
        body = response.get("body") or {}
        inner = body.get("error") if isinstance(body, dict) else None
        inner = inner if isinstance(inner, dict) else error
        status = response.get("status_code")
        return BatchResult("errored", batch_id,
                           error_type=str(inner.get("type") or inner.get("code") or
                                          f"HTTP {status}"),
                           message=str(inner.get("message") or "")[:500])

    async def cancel(self, batch_id: str) -> None:
        await self._call(lambda: self.client.batches.cancel(batch_id))

    async def find(self, token: str, at: datetime, requests: int) -> str | None:
        """The batch whose metadata holds `token` (ix writes it into every batch)."""
        page = await self._call(lambda: self.client.batches.list(limit=100))
        async for batch in page:
            if (batch.metadata or {}).get("ix_token") == token:
                return str(batch.id)
            if datetime.fromtimestamp(batch.created_at, tz=at.tzinfo) < at - FIND_WINDOW:
                break
        return None
