"""The loopback batch servers, driven by the official SDKs as the batch runtimes drive them."""

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import openai
import pytest
from anthropic.types.messages import MessageBatchIndividualResponse
from fake_batch_servers import BatchRequest, FakeBatchServer
from fake_llm_servers import FAKE_KEY, Reply, http_error, text_reply

HERE = Path(__file__).resolve().parent


class Clock:
    """A clock the test moves, so processing is deterministic."""

    def __init__(self) -> None:
        self.t = 1_790_000_000.0

    def __call__(self) -> float:
        return self.t


def echo(request: BatchRequest) -> Reply:
    return text_reply(f"re: {request.prompt_text()}")


def params(prompt: str) -> dict[str, object]:
    return {"model": "claude-test", "max_tokens": 64,
            "messages": [{"role": "user", "content": prompt}]}


def requests(*ids: str) -> list[dict[str, object]]:
    return [{"custom_id": cid, "params": params(f"prompt {cid}")} for cid in ids]


def anthropic_client(api: FakeBatchServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=api.base_url, api_key=FAKE_KEY, max_retries=0)


def openai_client(api: FakeBatchServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=api.base_url, api_key=FAKE_KEY, max_retries=0)


def results(client: anthropic.Anthropic, batch_id: str) -> dict[str, object]:
    out = {}
    for line in client.messages.batches.results(batch_id):
        assert isinstance(line, MessageBatchIndividualResponse)
        out[line.custom_id] = line.result
    return out


# --- anthropic --------------------------------------------------------------------------------

def test_anthropic_batch_is_in_progress_until_the_delay_then_ends_with_results() -> None:
    clock = Clock()
    with FakeBatchServer("anthropic", router=echo, process_after_s=30, clock=clock) as api:
        client = anthropic_client(api)
        created = client.messages.batches.create(requests=requests("t1", "t2"))
        assert created.id.startswith("msgbatch_") and created.type == "message_batch"
        assert created.processing_status == "in_progress" and created.results_url is None
        assert created.request_counts.processing == 2
        clock.t += 29
        assert client.messages.batches.retrieve(created.id).processing_status == "in_progress"
        clock.t += 1
        ended = client.messages.batches.retrieve(created.id)
        assert ended.processing_status == "ended" and ended.ended_at is not None
        assert ended.request_counts.succeeded == 2 and ended.request_counts.processing == 0
        assert ended.results_url == f"{api.url}/v1/messages/batches/{created.id}/results"
        got = results(client, created.id)
        assert [got[c].message.content[0].text for c in ("t1", "t2")] == [
            "re: prompt t1", "re: prompt t2"]
        assert api.batches[0].custom_ids == ["t1", "t2"]
        assert api.batches[0].requests[0].body == params("prompt t1")
        assert api.api_requests() == []        # batch traffic is not the completion endpoint


def test_anthropic_errored_expired_and_router_errors_are_per_request_results() -> None:
    def router(request: BatchRequest) -> Reply:
        return http_error(400, message="bad params") if request.custom_id == "bad" else \
            text_reply()

    with FakeBatchServer("anthropic", router=router, errored=lambda r: r.custom_id == "e",
                         expired=lambda r: r.custom_id == "x") as api:
        client = anthropic_client(api)
        batch = client.messages.batches.create(requests=requests("ok", "e", "x", "bad"))
        counts = client.messages.batches.retrieve(batch.id).request_counts
        assert (counts.succeeded, counts.errored, counts.expired) == (1, 2, 1)
        got = results(client, batch.id)
        assert got["ok"].type == "succeeded"
        assert got["x"].type == "expired"
        assert got["e"].type == "errored" and got["e"].error.error.type == "api_error"
        bad = got["bad"]
        assert bad.type == "errored" and bad.error.type == "error"
        assert bad.error.error.type == "invalid_request_error"
        assert bad.error.error.message == "bad params"


def test_anthropic_script_answers_first_and_results_may_come_out_of_order() -> None:
    with FakeBatchServer("anthropic", reverse_results=True) as api:
        api.script.append(text_reply("scripted"))
        client = anthropic_client(api)
        batch = client.messages.batches.create(requests=requests("a", "b"))
        lines = list(client.messages.batches.results(batch.id))
        assert [line.custom_id for line in lines] == ["b", "a"]
        assert lines[1].result.message.content[0].text == "scripted"


def test_anthropic_held_batch_stays_in_progress_until_cancelled_then_all_canceled() -> None:
    clock = Clock()
    with FakeBatchServer("anthropic", process_after_s=None, cancel_after_s=5,
                         clock=clock) as api:
        client = anthropic_client(api)
        batch = client.messages.batches.create(requests=requests("a", "b"))
        clock.t += 86_000
        assert client.messages.batches.retrieve(batch.id).processing_status == "in_progress"
        canceling = client.messages.batches.cancel(batch.id)
        assert canceling.processing_status == "canceling"
        assert canceling.cancel_initiated_at is not None
        clock.t += 4
        assert client.messages.batches.retrieve(batch.id).processing_status == "canceling"
        clock.t += 1
        ended = client.messages.batches.retrieve(batch.id)
        assert ended.processing_status == "ended" and ended.request_counts.canceled == 2
        assert {r.type for r in results(client, batch.id).values()} == {"canceled"}
        assert api.cancels == [batch.id]
        with pytest.raises(anthropic.BadRequestError, match="already ended"):
            client.messages.batches.cancel(batch.id)
        assert api.cancels == [batch.id, batch.id]


def test_anthropic_cancel_midway_keeps_the_requests_already_due() -> None:
    clock = Clock()
    with FakeBatchServer("anthropic", process_after_s=0, per_request_s=10, clock=clock) as api:
        client = anthropic_client(api)
        batch = client.messages.batches.create(requests=requests("a", "b", "c", "d"))
        clock.t += 15                                   # a (t=0) and b (t=10) are due
        client.messages.batches.cancel(batch.id)
        clock.t += 100
        got = results(client, batch.id)
        assert {c: r.type for c, r in got.items()} == {
            "a": "succeeded", "b": "succeeded", "c": "canceled", "d": "canceled"}


def test_anthropic_release_starts_a_held_batch() -> None:
    clock = Clock()
    with FakeBatchServer("anthropic", process_after_s=None, clock=clock) as api:
        client = anthropic_client(api)
        held = client.messages.batches.create(requests=requests("a"))
        other = client.messages.batches.create(requests=requests("b"))
        api.release(held.id, after_s=3)
        clock.t += 3
        assert client.messages.batches.retrieve(held.id).processing_status == "ended"
        assert client.messages.batches.retrieve(other.id).processing_status == "in_progress"


def test_anthropic_list_pages_newest_first_with_after_and_before_ids() -> None:
    with FakeBatchServer("anthropic", process_after_s=None) as api:
        client = anthropic_client(api)
        ids = [client.messages.batches.create(requests=requests(f"r{i}")).id for i in range(5)]
        page = client.messages.batches.list(limit=2)
        assert [b.id for b in page.data] == [ids[4], ids[3]]
        assert page.has_more and page.first_id == ids[4] and page.last_id == ids[3]
        assert [b.id for b in client.messages.batches.list(limit=2)] == ids[::-1]  # auto-paging
        last = client.messages.batches.list(limit=2, after_id=ids[1])
        assert [b.id for b in last.data] == [ids[0]] and not last.has_more
        before = client.messages.batches.list(limit=2, before_id=ids[1])
        assert [b.id for b in before.data] == [ids[3], ids[2]] and before.has_more


@pytest.mark.parametrize(("reqs", "match"), [
    (requests("a", "b", "c"), "too many requests"),
    (requests("a", "a"), "duplicate custom_id"),
    (requests("has space"), "custom_id"),
    (requests("x" * 65), "custom_id"),
    ([], "requests"),
])
def test_anthropic_rejects_batches_beyond_the_limits(reqs: list[dict[str, object]],
                                                      match: str) -> None:
    with FakeBatchServer("anthropic", max_requests=2) as api:
        with pytest.raises(anthropic.BadRequestError, match=match) as exc:
            anthropic_client(api).messages.batches.create(requests=reqs)
        assert exc.value.body["error"]["type"] == "invalid_request_error"
        assert api.batches == []


def test_anthropic_rejects_a_batch_over_the_byte_limit_with_413() -> None:
    with FakeBatchServer("anthropic", max_bytes=2000) as api:
        client = anthropic_client(api)
        client.messages.batches.create(requests=requests("a"))
        big = [{"custom_id": "b", "params": params("x" * 3000)}]
        with pytest.raises(anthropic.RequestTooLargeError):
            client.messages.batches.create(requests=big)
        assert len(api.batches) == 1


def test_anthropic_unknown_batch_is_404_and_unfinished_has_no_results() -> None:
    with FakeBatchServer("anthropic", process_after_s=None) as api:
        client = anthropic_client(api)
        with pytest.raises(anthropic.NotFoundError):
            client.messages.batches.retrieve("msgbatch_nope")
        batch = client.messages.batches.create(requests=requests("a"))
        with pytest.raises(anthropic.AnthropicError, match="No `results_url`"):
            client.messages.batches.results(batch.id)


def test_anthropic_async_client_and_completion_endpoint_share_one_server() -> None:
    async def main(api: FakeBatchServer) -> tuple[str, str]:
        client = anthropic.AsyncAnthropic(base_url=api.base_url, api_key=FAKE_KEY,
                                          max_retries=0)
        message = await client.messages.create(**params("direct"))
        batch = await client.messages.batches.create(requests=requests("a"))
        while (await client.messages.batches.retrieve(batch.id)).processing_status != "ended":
            await asyncio.sleep(0.05)
        lines = [line async for line in await client.messages.batches.results(batch.id)]
        return message.content[0].text, lines[0].result.message.content[0].text

    with FakeBatchServer("anthropic", router=echo, process_after_s=0.2) as api:
        started = time.monotonic()
        assert asyncio.run(main(api)) == ("re: direct", "re: prompt a")
        assert time.monotonic() - started >= 0.2
        assert len(api.api_requests()) == 1


@pytest.mark.slow
def test_state_survives_a_sigkilled_client_and_serves_a_subprocess_by_env() -> None:
    script = (
        "import anthropic, time\n"
        "c = anthropic.Anthropic(max_retries=0)\n"
        "b = c.messages.batches.create(requests=[{'custom_id': 'k1', 'params': "
        "{'model': 'm', 'max_tokens': 5, 'messages': [{'role': 'user', 'content': 'hi'}]}}])\n"
        "print(b.id, flush=True)\n"
        "while True:\n"
        "    c.messages.batches.retrieve(b.id); time.sleep(0.05)\n")
    with FakeBatchServer("anthropic", process_after_s=None) as api:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC")}
        child = subprocess.Popen([sys.executable, "-c", script], env={**env, **api.env()},
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        batch_id = child.stdout.readline().strip()
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
        api.release()
        client = anthropic_client(api)
        assert client.messages.batches.retrieve(batch_id).processing_status == "ended"
        assert api.submitted_custom_ids() == ["k1"]


# --- openai -----------------------------------------------------------------------------------

def line(cid: str, prompt: str = "", url: str = "/v1/chat/completions",
         model: str = "gpt-test") -> dict[str, object]:
    return {"custom_id": cid, "method": "POST", "url": url,
            "body": {"model": model, "messages": [{"role": "user",
                                                   "content": prompt or f"prompt {cid}"}]}}


def upload(client: openai.OpenAI, lines: list[dict[str, object]]) -> str:
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    return client.files.create(file=("trials.jsonl", io.BytesIO(data)), purpose="batch").id


def submit(client: openai.OpenAI, lines: list[dict[str, object]]) -> openai.types.Batch:
    return client.batches.create(input_file_id=upload(client, lines),
                                 endpoint="/v1/chat/completions", completion_window="24h",
                                 metadata={"run": "r1"})


def jsonl(client: openai.OpenAI, file_id: str | None) -> dict[str, dict[str, object]]:
    assert file_id is not None
    return {x["custom_id"]: x for x in map(json.loads, client.files.content(file_id).text
                                           .splitlines())}


def test_openai_file_and_batch_go_validating_in_progress_completed() -> None:
    clock = Clock()
    with FakeBatchServer("openai", router=echo, process_after_s=60, clock=clock) as api:
        client = openai_client(api)
        data = json.dumps(line("a")).encode() + b"\n"
        file = client.files.create(file=("trials.jsonl", io.BytesIO(data)), purpose="batch")
        assert (file.object, file.purpose, file.bytes, file.filename) == (
            "file", "batch", len(data), "trials.jsonl")
        assert client.files.content(file.id).content == data
        batch = client.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions",
                                      completion_window="24h", metadata={"run": "r1"})
        assert batch.status == "validating" and batch.metadata == {"run": "r1"}
        progress = client.batches.retrieve(batch.id)
        assert progress.status == "in_progress" and progress.output_file_id is None
        assert progress.request_counts is not None and progress.request_counts.total == 1
        clock.t += 60
        done = client.batches.retrieve(batch.id)
        assert done.status == "completed" and done.completed_at == int(clock.t)
        assert done.request_counts is not None and done.request_counts.completed == 1
        assert done.error_file_id is None and done.model == "gpt-test"
        out = jsonl(client, done.output_file_id)["a"]
        response = out["response"]
        assert out["error"] is None and response["status_code"] == 200
        completion = openai.types.chat.ChatCompletion.model_validate(response["body"])
        assert completion.choices[0].message.content == "re: prompt a"
        assert api.batches[0].requests[0].custom_id == "a"


def test_openai_errored_and_expired_requests_go_to_the_error_file() -> None:
    def router(request: BatchRequest) -> Reply:
        return http_error(400, message="bad") if request.custom_id == "bad" else text_reply()

    with FakeBatchServer("openai", router=router, errored=lambda r: r.custom_id == "e",
                         expired=lambda r: r.custom_id == "x") as api:
        client = openai_client(api)
        batch = client.batches.retrieve(submit(client, [line(c) for c in
                                                        ("ok", "e", "x", "bad")]).id)
        assert batch.status == "expired" and batch.expired_at is not None
        assert batch.request_counts is not None
        assert (batch.request_counts.completed, batch.request_counts.failed) == (1, 3)
        assert set(jsonl(client, batch.output_file_id)) == {"ok"}
        errors = jsonl(client, batch.error_file_id)
        assert errors["x"]["response"] is None
        assert errors["x"]["error"] == {"code": "batch_expired", "message": (
            "This request could not be executed before the completion window expired.")}
        assert errors["bad"]["response"]["status_code"] == 400
        assert errors["bad"]["response"]["body"]["error"]["message"] == "bad"
        assert errors["e"]["response"]["status_code"] == 500


@pytest.mark.parametrize(("lines", "code", "at"), [
    ([line("a"), line("b"), line("c")], "too_many_tasks", None),
    ([line("a"), line("a")], "duplicate_custom_id", 2),
    ([line("a"), line("b", url="/v1/embeddings")], "url_mismatch", 2),
    ([line("a"), line("b", model="other")], "model_mismatch", 2),
    ([], "empty_file", None),
])
def test_openai_invalid_input_files_make_a_failed_batch(lines: list[dict[str, object]],
                                                        code: str, at: int | None) -> None:
    with FakeBatchServer("openai", max_requests=2) as api:
        client = openai_client(api)
        batch = client.batches.retrieve(submit(client, lines).id)
        assert batch.status == "failed" and batch.failed_at is not None
        assert batch.errors is not None and batch.errors.data is not None
        assert (batch.errors.data[0].code, batch.errors.data[0].line) == (code, at)
        assert batch.output_file_id is None and batch.error_file_id is None


def test_openai_rejects_big_or_misnamed_files_and_unknown_inputs() -> None:
    with FakeBatchServer("openai", max_bytes=500) as api:
        client = openai_client(api)
        big = json.dumps(line("a", "x" * 600)).encode()
        with pytest.raises(openai.BadRequestError, match="File is too large"):
            client.files.create(file=("trials.jsonl", io.BytesIO(big)), purpose="batch")
        with pytest.raises(openai.BadRequestError, match=r"Must be \.jsonl"):
            client.files.create(file=io.BytesIO(b"{}\n"), purpose="batch")
        with pytest.raises(openai.BadRequestError, match="input_file_id"):
            client.batches.create(input_file_id="file-nope", endpoint="/v1/chat/completions",
                                  completion_window="24h")
        with pytest.raises(openai.NotFoundError):
            client.batches.retrieve("batch_nope")
        assert api.batches == []


def test_openai_cancel_goes_cancelling_then_cancelled_with_partial_output() -> None:
    clock = Clock()
    with FakeBatchServer("openai", process_after_s=0, per_request_s=10, cancel_after_s=5,
                         clock=clock) as api:
        client = openai_client(api)
        batch = submit(client, [line(c) for c in "abc"])
        clock.t += 5                                    # only a is due
        cancelling = client.batches.cancel(batch.id)
        assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
        clock.t += 5
        cancelled = client.batches.retrieve(batch.id)
        assert cancelled.status == "cancelled" and cancelled.cancelled_at is not None
        assert cancelled.request_counts is not None
        assert (cancelled.request_counts.completed, cancelled.request_counts.total) == (1, 3)
        assert set(jsonl(client, cancelled.output_file_id)) == {"a"}
        assert cancelled.error_file_id is None
        assert api.batches[0].outcomes() == {"a": "succeeded", "b": "canceled",
                                             "c": "canceled"}
        with pytest.raises(openai.ConflictError):
            client.batches.cancel(batch.id)
        assert api.cancels == [batch.id, batch.id]


def test_openai_cancelled_lines_lists_the_canceled_requests_in_the_error_file() -> None:
    with FakeBatchServer("openai", process_after_s=None, cancelled_lines=True) as api:
        client = openai_client(api)
        batch = submit(client, [line("a"), line("b")])
        client.batches.cancel(batch.id)
        cancelled = client.batches.retrieve(batch.id)
        assert cancelled.status == "cancelled" and cancelled.output_file_id is None
        errors = jsonl(client, cancelled.error_file_id)
        assert {c: x["error"]["code"] for c, x in errors.items()} == {
            "a": "batch_cancelled", "b": "batch_cancelled"}


def test_openai_list_pages_newest_first_with_after() -> None:
    with FakeBatchServer("openai", process_after_s=None) as api:
        client = openai_client(api)
        ids = [submit(client, [line(f"r{i}")]).id for i in range(5)]
        page = client.batches.list(limit=2)
        assert [b.id for b in page.data] == [ids[4], ids[3]] and page.has_more
        assert [b.id for b in client.batches.list(limit=2)] == ids[::-1]   # auto-paging
        assert [b.id for b in client.batches.list(after=ids[1]).data] == [ids[0]]
        assert {b.status for b in page.data} == {"in_progress"}


def test_openai_server_still_answers_chat_completions() -> None:
    with FakeBatchServer("openai", router=echo) as api:
        client = openai_client(api)
        answer = client.chat.completions.create(model="gpt-test", messages=[
            {"role": "user", "content": "direct"}])
        assert answer.choices[0].message.content == "re: direct"
        assert len(api.api_requests()) == 1 and api.batches == []
