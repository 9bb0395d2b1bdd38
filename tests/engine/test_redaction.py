"""The run's redactor: which values it knows to be secret, and how it takes them out of text,
observations, readings, trial errors and cache entries."""

import asyncio
import gzip
from pathlib import Path

import pytest

from ix.domain.errors import TrialError
from ix.domain.redaction import REDACTED, Redactor
from ix.domain.types import Reading, Subject
from ix.engine.cache import CachingRuntime
from ix.engine.redactor import spec_secrets
from ix.eval.models import EvalCase, EvalObservation, ToolCall
from ix.store.cache import ObservationCache

KEY = "key-0123456789abcdef"


def test_longest_first_url_encoded_too_and_short_values_ignored():
    r = Redactor(["abcdefgh", "abcdefgh-ijkl", "short", None, "  spaced    ", "a/b+c=d&e"])
    assert r.text("x abcdefgh-ijkl y abcdefgh z") == f"x {REDACTED} y {REDACTED} z"
    assert r.text("short is kept") == "short is kept"
    assert r.text("?k=a%2Fb%2Bc%3Dd%26e") == f"?k={REDACTED}"
    assert "short" not in r.values and "  spaced    " not in r.values
    assert "abcdefgh" not in repr(r)  # the values never show


def test_a_tree_without_secrets_is_returned_as_is():
    r = Redactor([KEY])
    obs = EvalObservation(content="fine", tool_calls=(ToolCall(name="Skill",
                                                                input={"skill": "x"}),),
                          meta={"a": [1, 2.5, None, True]}, trace=[{"line": "ok"}])
    assert r.tree(obs) is obs
    data = {"a": ["b", ("c", 1)], "d": None}
    assert r.tree(data) is data
    assert Redactor().tree(f"{KEY}") == KEY  # nothing known: nothing to do


def test_every_string_of_an_observation_is_redacted_keys_and_trace_included():
    r = Redactor([KEY])
    obs = EvalObservation(content=f"your key is {KEY}", stdout=KEY, headers={"x-echo": KEY},
                          tool_calls=(ToolCall(name="Skill", input={"note": [f"k={KEY}"],
                                                                    KEY: 1}),),
                          meta={"model": "m"}, trace=[{"response": {"text": KEY}}, f"{KEY}"])
    out = r.tree(obs)
    assert out.content == f"your key is {REDACTED}" and out.stdout == REDACTED
    assert out.headers == {"x-echo": REDACTED}
    assert out.tool_calls[0].input == {"note": [f"k={REDACTED}"], REDACTED: 1}
    assert out.trace == [{"response": {"text": REDACTED}}, REDACTED]
    assert out.meta is obs.meta  # untouched parts are shared, not copied
    assert KEY not in out.model_dump_json()


@pytest.mark.parametrize("secret", ['quo"te-0123456789', "back\\slash-012345", "tab\there-0123"])
def test_a_secret_that_json_escapes_is_still_found(secret):
    r = Redactor([secret])
    assert r.tree({"x": [f"<{secret}>"]}) == {"x": [f"<{REDACTED}>"]}


def test_readings_are_redacted():
    r = Redactor([KEY])
    readings = (Reading(sensor_name="quality", passed=True, details=f"it said {KEY}",
                        metrics={"quality": 8.0}),)
    assert r.tree(readings)[0].details == f"it said {REDACTED}"


def test_the_secrets_runtime_options_hold_or_read():
    env = {"MY_KEY_VAR": "from-api-key-env-123", "HDR": "read-by-a-header-123",
           "TOK": "read-under-secret-key-1", "LANG_VAR": "en_US.UTF-8-ordinary"}
    spec = {
        "kind": "http", "api_key_env": "MY_KEY_VAR", "max_tokens": 12345678,
        "headers": {"X-Client": "{{ env.HDR }}", "Authorization": "Bearer literal-token-99",
                    "Accept": "application/json"},
        "env": {"API_TOKEN": "{{ env.TOK }}", "LANG": "{{ env.LANG_VAR }}"},
        "note": "sk-shapedlikeakey0001",
        "nested": [{"password": "hunter2hunter2"}],
    }
    found = {v for v in spec_secrets(spec, env) if v}
    assert found >= {"from-api-key-env-123", "read-by-a-header-123", "read-under-secret-key-1",
                     "Bearer literal-token-99", "literal-token-99", "sk-shapedlikeakey0001",
                     "hunter2hunter2"}
    # an ordinary header, a number, and a variable read under an ordinary name are not secrets
    assert not found & {"application/json", "12345678", "en_US.UTF-8-ordinary"}


def test_what_grpc_metadata_reads_from_the_environment_is_a_secret():
    env = {"SVC_PASS": "read-by-metadata-123", "REGION": "eu-west-ordinary"}
    spec = {"kind": "grpc", "metadata": {"x-client": "{{ env.SVC_PASS }}",
                                         "x-region": "eu-west-1-literal"}}
    found = {v for v in spec_secrets(spec, env) if v}
    assert "read-by-metadata-123" in found
    assert not found & {"eu-west-ordinary", "eu-west-1-literal"}


def test_the_cache_records_what_the_subject_said_redacted(tmp_path: Path):
    class Echo:
        async def invoke(self, subject, stimulus, *, seed=0, attempt=0):
            if stimulus.id == "boom":
                raise TrialError("server_error", f"upstream choked on {KEY}")
            return EvalObservation(content=f"key {KEY}", trace=[{"raw": KEY}])

    cache = ObservationCache(tmp_path)
    runtime = CachingRuntime(Echo(), cache, "s" * 64, "use", Redactor([KEY]))
    subject = Subject(name="s")
    got = asyncio.run(runtime.invoke(subject, EvalCase(id="c", prompt="p",
                                                       expectation="must_trigger")))
    assert got.content == f"key {KEY}"  # the run's pipeline redacts what it is given
    with pytest.raises(TrialError):
        asyncio.run(runtime.invoke(subject, EvalCase(id="boom", prompt="p",
                                                     expectation="must_trigger")))
    entries = [gzip.decompress(p.read_bytes()).decode() for p in tmp_path.rglob("*.json.gz")]
    assert len(entries) == 2 and all(REDACTED in e and KEY not in e for e in entries)
