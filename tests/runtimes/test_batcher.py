"""The batch collector (`ix.runtimes.batches`) in process, against the loopback batch APIs:
splitting, the journal read back, a batch created just before a crash found again."""

import asyncio
import json
from pathlib import Path

import pytest

from ix.runtimes.anthropic import AnthropicOptions, AnthropicRuntime
from ix.runtimes.batches import BatchJournal, chunks, custom_id
from ix.runtimes.openai import OpenAIOptions, OpenAIRuntime
from ix.runtimes.registry import RuntimeContext
from runtimes.fake_batch_servers import ApiError, FakeBatchServer
from runtimes.fake_llm_servers import text_reply


def test_custom_ids_are_stable_distinct_and_within_the_apis_pattern():
    a = custom_id("with-skills", "must-001", 42, 0)
    assert a == custom_id("with-skills", "must-001", 42, 0)
    assert len({a, custom_id("with-skills", "must-001", 42, 1),
                custom_id("with-skills", "must-001", 43, 0),
                custom_id("control", "must-001", 42, 0)}) == 4
    assert len(a) <= 64 and all(c.isalnum() or c in "-_" for c in a)


def test_chunks_split_at_the_count_and_at_the_size_limit():
    small = [(f"r{i}", {"p": "x"}) for i in range(10)]
    assert [len(c) for c in chunks(small, 4, 10**9)] == [4, 4, 2]
    big = [(f"r{i}", {"p": "x" * 1000}) for i in range(10)]
    sizes = [len(c) for c in chunks(big, 100, 3500)]
    assert sum(sizes) == 10 and max(sizes) == 3  # ~1,080 bytes each, 3 fit in 3,500
    assert [c for chunk in chunks(big, 100, 3500) for c, _ in chunk] == [c for c, _ in big]


def _runtime(provider: str, api: FakeBatchServer):
    if provider == "anthropic":
        return AnthropicRuntime(AnthropicOptions(
            model="claude-sonnet-4-5", base_url=api.base_url, api_key_env=None, batch=True,
            batch_poll_s=0.05, retries=0), RuntimeContext())
    return OpenAIRuntime(OpenAIOptions(
        model="gpt-4o-mini", base_url=api.base_url, api_key_env=None, batch=True,
        batch_poll_s=0.05, retries=0), RuntimeContext())


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_batch_created_before_its_id_was_written_is_found_again_not_resent(
        tmp_path, provider):
    """The journal has the `submit` line but not the `created` one (a kill between the API
    call and the write): the batch is found at the provider and waited on."""
    with FakeBatchServer(provider, process_after_s=0.1,
                         router=lambda r: text_reply("answered")) as api:
        runtime = _runtime(provider, api)
        batcher = runtime.batcher
        assert batcher is not None
        ids = [custom_id("s", f"c{i}", 7, 0) for i in range(3)]
        body = runtime.request_body(_subject(), "hello")
        journal_path = tmp_path / "batches.jsonl"

        async def first_process() -> None:
            provider_api = await runtime._batches()
            token = "tok123"
            # what a killed ix left: the submit line, the batch created, no `created` line
            BatchJournal.open(journal_path, lambda _: None).submitting(
                token, provider, "s", ids)
            await provider_api.create([(cid, body) for cid in ids], token)

        asyncio.run(first_process())
        assert len(api.batches) == 1
        created: list[dict] = []
        batcher.attach(BatchJournal.open(journal_path, created.append))

        async def resumed() -> list:
            batcher.subject = "s"
            return await asyncio.gather(*(batcher.call(cid, body) for cid in ids))

        results = asyncio.run(resumed())
        assert [r.kind for r in results] == ["succeeded"] * 3
        assert len(api.batches) == 1  # found again: nothing sent twice
        assert [c["id"] for c in created] == [api.batches[0].id]
        events = [json.loads(x)["event"] for x in journal_path.read_text().splitlines()]
        assert events == ["submit", "created"]


def test_a_submit_that_never_reached_the_provider_is_sent_on_resume(tmp_path):
    with FakeBatchServer("anthropic", process_after_s=0.1,
                         router=lambda r: text_reply("answered")) as api:
        runtime = _runtime("anthropic", api)
        batcher = runtime.batcher
        assert batcher is not None
        body = runtime.request_body(_subject(), "hello")
        cid = custom_id("s", "c0", 7, 0)
        journal_path = tmp_path / "batches.jsonl"
        journal = BatchJournal.open(journal_path, lambda _: None)
        journal.submitting("lost", "anthropic", "s", [cid])  # the create never arrived
        batcher.attach(BatchJournal.open(journal_path, lambda _: None))

        async def resumed():
            batcher.subject = "s"
            return await batcher.call(cid, body)

        assert asyncio.run(resumed()).kind == "succeeded"
        assert api.submitted_custom_ids() == [cid]
        events = [json.loads(x)["event"] for x in journal_path.read_text().splitlines()]
        assert events == ["submit", "failed", "submit", "created"]


def _subject():
    from ix.domain.types import Subject
    return Subject(name="s", description="", config={})


def test_a_journal_line_cut_by_a_crash_is_ignored(tmp_path: Path):
    path = tmp_path / "batches.jsonl"
    path.write_text('{"event": "submit", "token": "a", "provider": "anthropic", '
                    '"subject": "s", "at": "2026-01-01T00:00:00Z", "custom_ids": ["x"]}\n'
                    '{"event": "created", "token": "a", "id": "msgbatch_1"}\n'
                    '{"event": "subm')
    journal = BatchJournal.open(path, lambda _: None)
    assert journal.latest == {"x": "msgbatch_1"} and journal.orphans == []


def test_a_status_request_failing_for_a_while_is_asked_again_not_given_up(tmp_path):
    """A 5xx on the status request (after its own retries): the batch lives on for hours,
    so its trials wait; failing them would send (and bill) their requests twice."""
    with FakeBatchServer("anthropic", process_after_s=0.3,
                         router=lambda r: text_reply("answered")) as api:
        runtime = _runtime("anthropic", api)
        batcher = runtime.batcher
        assert batcher is not None
        body = runtime.request_body(_subject(), "hello")
        failures = {"left": 3}
        real = api._route

        def flaky(method, path, request, raw):
            if method == "GET" and path.startswith("/v1/messages/batches/msgbatch") \
                    and not path.endswith("/results") and failures["left"] > 0:
                failures["left"] -= 1
                raise ApiError(500, "api_error", "try again")
            return real(method, path, request, raw)

        api._route = flaky

        async def one():
            batcher.subject = "s"
            return await batcher.call(custom_id("s", "c0", 1, 0), body)

        assert asyncio.run(one()).kind == "succeeded"
        assert failures["left"] == 0 and len(api.batches) == 1


def test_a_batch_cancelled_by_a_second_ctrl_c_leaves_its_trials_unanswered(tmp_path):
    """Its canceled results may come back before the run has ended: they are no answer (a
    `batch_canceled` line would stand on `--resume`, which must send the request again)."""
    with FakeBatchServer("anthropic", process_after_s=None,
                         router=lambda r: text_reply("answered")) as api:
        runtime = _runtime("anthropic", api)
        batcher = runtime.batcher
        assert batcher is not None
        body = runtime.request_body(_subject(), "hello")
        batcher.attach(BatchJournal.open(tmp_path / "batches.jsonl", lambda _: None))

        async def cancelled() -> bool:
            batcher.subject = "s"
            trial = asyncio.ensure_future(batcher.call(custom_id("s", "c0", 1, 0), body))
            while not batcher.in_flight:
                await asyncio.sleep(0.01)
            assert await batcher.cancel_all() == [api.batches[0].id]
            for _ in range(200):  # the poller (every 0.05 s) sees the batch end, canceled
                if api.batches[0].ended is not None:
                    break
                await asyncio.sleep(0.01)
            assert [r.outcome for r in api.batches[0].results.values()] == ["canceled"]
            await asyncio.sleep(0.3)  # and reads its results
            answered = trial.done()
            trial.cancel()
            batcher.close()
            return answered

        assert asyncio.run(cancelled()) is False
        assert api.cancels == [api.batches[0].id]
