"""The `grpc` runtime against a real gRPC server on 127.0.0.1 (`grpc_support`): the routing
answer, retries, a deadline, statuses that are not retried, secrets in metadata, bad
configuration, reflection; `ix run` end to end in the real `ix`."""

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_support import METHOD, PROTO, free_port, self_signed, serving

from conftest import case as write_case
from conftest import ix_in_process, run_ix, write
from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase
from ix.runtimes import RuntimeContext, build_runtime

SUBJECT = Subject(name="router", config={"model": "v1"})
FAST = {"backoff_s": 0.001, "backoff_max_s": 0.01}
REQUEST = {"text": "{{ prompt }}", "case_id": "{{ case.id }}", "attempt": "{{ attempt }}"}


def case(prompt: str = "read this pdf", case_id: str = "c-1") -> EvalCase:
    return EvalCase(id=case_id, prompt=prompt, expectation="must_trigger")


def runtime(target: str, base_dir: Path | None = None, **options):
    spec = {"kind": "grpc", "target": target, "proto": str(PROTO), "method": METHOD,
            "request": REQUEST, **FAST, **options}
    return build_runtime(spec, RuntimeContext(base_dir=base_dir))


def invoke(rt, stimulus=None, *, attempt: int = 0):
    return asyncio.run(rt.invoke(SUBJECT, stimulus or case(), seed=7, attempt=attempt))


def config_error(target: str = "127.0.0.1:1", **options) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        runtime(target, **options)
    return info.value


def test_a_routing_answer_becomes_text_skill_calls_and_the_reply_as_json():
    with serving() as (target, router):
        rt = runtime(target, response={"content": "$.answer", "skills": "$.skills"},
                     metadata={"x-subject": "{{ subject.name }}",
                               "x-case-bin": "{{ case.id }}é"})
        obs = invoke(rt, case("summarise this pdf and the sheet"), attempt=2)
        quiet = invoke(rt, case("what is the weather", "c-2"))
    (fields, metadata), _ = router.calls
    assert fields["text"] == "summarise this pdf and the sheet"
    assert fields["case_id"] == "c-1" and fields["attempt"] == 2  # "2" read as an int32
    assert metadata["x-subject"] == "router"
    assert metadata["x-case-bin"] == "c-1é".encode()  # a -bin key: the value's UTF-8 bytes
    assert obs.content == "routed: summarise this pdf and the sheet"
    assert [c.input["skill"] for c in obs.tool_calls] == ["pdf", "xlsx"]
    assert {c.name for c in obs.tool_calls} == {"Skill"}
    body = json.loads(obs.body)  # the .proto's field names, every field written
    assert body["skills"] == ["pdf", "xlsx"] and body["best"] == {"skill": "pdf", "score": 0.75}
    assert "extra" not in body  # an unset message field (it has presence)
    assert quiet.tool_calls == () and json.loads(quiet.body)["skills"] == []


def test_without_response_paths_the_content_is_the_whole_reply():
    with serving() as (target, _):
        obs = invoke(runtime(target))
    assert json.loads(obs.content)["answer"] == "routed: read this pdf"
    assert obs.tool_calls == ()


def test_unavailable_is_retried_and_the_retries_are_counted():
    with serving() as (target, router):
        router.script["c-1"] = [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE]
        obs = invoke(runtime(target, retries=3))
    assert router.calls_of("c-1") == 3
    assert obs.meta == {"retries": 2}
    assert "routed" in obs.content


def test_unavailable_past_the_retries_is_a_connection_error():
    with serving() as (target, router):
        router.script["c-1"] = [grpc.StatusCode.UNAVAILABLE] * 5
        with pytest.raises(TrialError) as info:
            invoke(runtime(target, retries=2))
    assert router.calls_of("c-1") == 3
    assert info.value.kind == "connection_error"
    assert "UNAVAILABLE: scripted UNAVAILABLE (gave up after 3 tries)" in info.value.message


def test_a_server_that_is_not_there_is_unavailable_and_retried():
    with pytest.raises(TrialError) as info:
        invoke(runtime(f"127.0.0.1:{free_port()}", retries=1))
    assert info.value.kind == "connection_error"
    assert "gave up after 2 tries" in info.value.message


def test_a_deadline_ends_a_slow_call_and_is_retried():
    with serving() as (target, router):
        with pytest.raises(TrialError) as info:
            invoke(runtime(target, timeout_s=0.2, retries=1), case("slow pdf"))
        assert router.calls_of("c-1") == 2
    assert info.value.kind == "deadline_exceeded"
    assert "DEADLINE_EXCEEDED" in info.value.message


@pytest.mark.parametrize(("code", "kind"), [
    (grpc.StatusCode.INVALID_ARGUMENT, "bad_request"),
    (grpc.StatusCode.NOT_FOUND, "bad_request"),
    (grpc.StatusCode.INTERNAL, "server_error"),
])
def test_a_status_that_is_not_transient_ends_the_trial_at_once(code, kind):
    with serving() as (target, router):
        router.script["c-1"] = [code] * 5
        with pytest.raises(TrialError) as info:
            invoke(runtime(target, retries=4))
    assert router.calls_of("c-1") == 1
    assert info.value.kind == kind
    assert info.value.message == f"/{METHOD}: {code.name}: scripted {code.name}"


def test_a_reply_past_max_output_bytes_is_an_error_not_retried():
    with serving() as (target, router), pytest.raises(TrialError) as info:
        invoke(runtime(target, max_output_bytes=10))
    assert router.calls_of("c-1") == 1
    assert info.value.kind == "reply_too_large" and "max_output_bytes" in info.value.message


def test_a_request_value_the_message_cannot_take_is_an_invalid_request():
    with serving() as (target, router), pytest.raises(TrialError) as info:
        invoke(runtime(target, request={"text": "{{ prompt }}", "verbose": "yes"}))
    assert router.calls == []
    assert info.value.kind == "invalid_request"
    assert "ixtest.router.RouteRequest" in info.value.message and "verbose" in info.value.message


def test_a_request_as_a_json_template_sends_typed_values():
    with serving() as (target, router):
        invoke(runtime(target, request='{"text": {{ prompt | tojson }}, "verbose": true, '
                                        '"options": {"prefer": ["pdf"]}}'))
    (fields, _), = router.calls
    assert fields["verbose"] is True and fields["prefer"] == ["pdf"]


def test_secret_metadata_reaches_the_server_and_its_echo_is_redacted(monkeypatch):
    monkeypatch.setenv("IX_GRPC_TOKEN", "tok-0123456789")
    with serving() as (target, router):
        rt = runtime(target, metadata={"authorization": "Bearer {{ env.IX_GRPC_TOKEN }}"})
        obs = invoke(rt, case("a pdf", "echo"))
    (_, metadata), = router.calls
    assert metadata["authorization"] == "Bearer tok-0123456789"
    assert "tok-0123456789" not in obs.model_dump_json()
    assert obs.headers["x-echo"] == "[REDACTED]"
    assert json.loads(obs.body)["extra"] == {"authorization": "[REDACTED]"}


def test_tls_with_the_services_own_roots(tmp_path):
    key, cert = self_signed()
    (tmp_path / "ca.pem").write_bytes(cert)
    with serving(tls=(key, cert)) as (target, router):
        obs = invoke(runtime(target, base_dir=tmp_path, tls=True, ca_file="ca.pem",
                             response={"skills": "$.skills"}))
        assert [c.input["skill"] for c in obs.tool_calls] == ["pdf"]
        with pytest.raises(TrialError) as plain:  # a plain channel to a TLS server
            invoke(runtime(target, retries=0))
        with pytest.raises(TrialError) as untrusted:  # the system's roots do not know it
            invoke(runtime(target, retries=0, tls=True))
    assert router.calls_of("c-1") == 1
    assert plain.value.kind == untrusted.value.kind == "connection_error"
    error = config_error(tls=True, ca_file="nope.pem", base_dir=tmp_path)
    assert error.field == "runtime.ca_file" and "nope.pem" in error.message
    assert "`ca_file` goes with `tls: true`" in config_error(ca_file="ca.pem").message


def test_a_metadata_value_grpc_cannot_carry_fails_the_trial_without_showing_it():
    with serving() as (target, router), pytest.raises(TrialError) as info:
        invoke(runtime(target, metadata={"x-note": "{{ prompt }}"}), case("déjà\nvu"))
    assert router.calls == []
    assert info.value.kind == "invalid_header" and "'x-note'" in info.value.message
    assert "déjà" not in info.value.message


def test_env_is_refused_outside_metadata():
    with serving() as (target, _), pytest.raises(TrialError) as info:
        invoke(runtime(target, request={"text": "{{ env.HOME }}"}))
    assert info.value.kind == "template_error"
    assert "only in `metadata` templates" in info.value.message


@pytest.mark.parametrize(("options", "field", "words"), [
    ({"proto": "missing.proto"}, "runtime.proto", "no such file"),
    ({"method": "ixtest.router.Router/Rout"}, "runtime.method",
     "no method 'Rout' (methods: Route, Watch)"),
    ({"method": "ixtest.router.Routr/Route"}, "runtime.method",
     "no service 'ixtest.router.Routr' (services: ixtest.router.Router)"),
    ({"method": "ixtest.router.Router/Watch"}, "runtime.method", "streams"),
    ({"request": {"txt": "{{ prompt }}"}}, "runtime.request.txt",
     "no field 'txt' (fields: text, case_id, attempt, verbose, options)"),
    ({"request": {"options": {"prefr": ["x"]}}}, "runtime.request.options.prefr",
     "ixtest.router.Options has no field 'prefr'"),
    ({"response": {"skills": "$.skill"}}, "runtime.response.skills", "no field 'skill'"),
    ({"response": {"content": "$.best.name"}}, "runtime.response.content",
     "ixtest.router.Score has no field 'name'"),
])
def test_what_the_proto_does_not_have_is_a_configuration_error(options, field, words):
    error = config_error(**options)
    assert error.field == field and words in error.message, (error.field, error.message)


@pytest.mark.parametrize(("options", "field", "words"), [
    ({"target": "http://127.0.0.1:50051"}, "runtime.target", "without http://"),
    ({"target": "localhost"}, "runtime.target", "host:port"),
    ({"method": "Route"}, "runtime.method", "package.Service/Method"),
    ({"metadata": {"Authorization": "x"}}, "runtime.metadata", "lower-case"),
    ({"proto": None}, "runtime", "`reflection: true`"),
])
def test_bad_options_are_refused_naming_the_field(options, field, words):
    error = config_error(**options)
    assert error.field is not None and error.field.startswith(field), error.field
    assert words in error.message, error.message


def test_a_proto_that_does_not_compile_names_its_line(tmp_path):
    write(tmp_path / "bad.proto", 'syntax = "proto3";\npackage p;\nmessage A { strin a = 1; }\n')
    error = config_error(proto="bad.proto", base_dir=tmp_path)
    assert error.field == "runtime.proto"
    assert error.message.startswith("bad.proto:3:")
    assert '"strin" is not defined' in error.message


def test_a_relative_proto_and_its_import_paths_are_read_from_the_experiment(tmp_path):
    write(tmp_path / "protos" / "common" / "text.proto",
          'syntax = "proto3";\npackage common;\nmessage Text { string value = 1; }\n')
    write(tmp_path / "protos" / "echo" / "echo.proto", '''
        syntax = "proto3";
        package echo;
        import "common/text.proto";
        service Echo { rpc Say (common.Text) returns (common.Text); }
        ''')
    rt = build_runtime({"kind": "grpc", "target": "127.0.0.1:1", "proto": "protos/echo/echo.proto",
                        "import_paths": ["protos"], "method": "echo.Echo/Say",
                        "request": {"value": "{{ prompt }}"}},
                       RuntimeContext(base_dir=tmp_path))
    assert rt._method.path == "/echo.Echo/Say"  # compiled when built
    assert rt._method.input_name == "common.Text"


def test_protocs_warnings_are_not_printed(tmp_path, capfd):
    write(tmp_path / "u.proto", 'syntax = "proto3";\npackage u;\n'
          'import "google/protobuf/struct.proto";\nmessage A { string a = 1; }\n'
          'service S { rpc M (A) returns (A); }\n')  # an unused import: protoc warns
    rt = build_runtime({"kind": "grpc", "target": "127.0.0.1:1", "proto": "u.proto",
                        "method": "u.S/M"}, RuntimeContext(base_dir=tmp_path))
    assert rt._method.path == "/u.S/M"
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_reflection_finds_the_method_on_the_server():
    with serving(reflect=True) as (target, router):
        rt = build_runtime({"kind": "grpc", "target": target, "reflection": True,
                            "method": METHOD, "request": REQUEST,
                            "response": {"skills": "$.skills"}, **FAST}, RuntimeContext())
        obs = invoke(rt)
        again = invoke(rt, case("slides please", "c-2"))
    assert [c.input["skill"] for c in obs.tool_calls] == ["pdf"]
    assert [c.input["skill"] for c in again.tool_calls] == ["pptx"]
    assert router.calls_of("c-1") == 1


def test_reflection_names_a_method_the_server_lacks_and_a_server_without_it():
    with serving(reflect=True) as (target, _):
        rt = build_runtime({"kind": "grpc", "target": target, "reflection": True,
                            "method": "ixtest.router.Router/Nope", **FAST}, RuntimeContext())
        with pytest.raises(TrialError) as info:
            invoke(rt)
    assert info.value.kind == "unknown_method"
    assert "runtime.method: service 'ixtest.router.Router' has no method 'Nope'" in \
        info.value.message
    with serving() as (target, _):
        rt = build_runtime({"kind": "grpc", "target": target, "reflection": True,
                            "method": METHOD, **FAST}, RuntimeContext())
        with pytest.raises(TrialError) as info:
            invoke(rt)
    assert info.value.kind == "unknown_method" and "no reflection service" in info.value.message


def grpc_experiment(lab: Path, target: str, method: str = METHOD) -> Path:
    d = lab / "routing"
    write(d / "protos" / "router.proto", PROTO.read_text(encoding="utf-8"))
    write(d / "experiment.yaml", f"""
        name: routing
        skill: pdf
        trials: 2
        runtime:
          kind: grpc
          target: "{target}"
          proto: protos/router.proto
          method: {method}
          request: {{text: "{{{{ prompt }}}}", case_id: "{{{{ case.id }}}}"}}
          response: {{content: $.answer, skills: $.skills}}
          metadata: {{authorization: "Bearer {{{{ env.IX_GRPC_KEY }}}}"}}
          backoff_s: 0.001
        """)
    write_case(d, "pdf-1", "must_trigger", "extract the tables of this pdf")
    write_case(d, "pdf-2", "must_trigger", "merge two pdf files")
    write_case(d, "sheet", "should_not_trigger", "sum this sheet's column")
    return d


def test_ix_run_routes_cases_through_a_local_grpc_service(lab):
    with serving() as (target, router):
        router.script["pdf-2"] = [grpc.StatusCode.UNAVAILABLE]
        d = grpc_experiment(lab, target)
        r = run_ix("run", "--lab", str(lab), "--json", env={"IX_GRPC_KEY": "key-0123456789"})
    assert r.code == 0, r.output
    m = json.loads(r.stdout)["metrics"]
    assert (m["tp"], m["fn"], m["fp"], m["tn"]) == (2, 0, 0, 1)
    text = (d / "results" / "trials.jsonl").read_text(encoding="utf-8")
    records = [json.loads(line) for line in text.splitlines()]
    assert len(records) == 6 and all(rec["error"] is None for rec in records)
    pdf = next(rec for rec in records if rec["probe_id"] == "pdf-1")
    assert pdf["observation"]["content"] == "routed: extract the tables of this pdf"
    assert pdf["observation"]["tool_calls"] == [{"name": "Skill", "input": {"skill": "pdf"}}]
    assert sorted(rec["observation"].get("meta", {}).get("retries", 0)
                  for rec in records) == [0, 0, 0, 0, 0, 1]
    assert all(md["authorization"] == "Bearer key-0123456789" for _, md in router.calls)
    written = text + "".join(p.read_text() for p in (d / "results").rglob("*.yaml"))
    assert "key-0123456789" not in written


def test_ix_validate_refuses_an_unknown_method_naming_the_file_and_field(lab):
    d = grpc_experiment(lab, "127.0.0.1:1", method="ixtest.router.Router/Rout")
    r = ix_in_process("validate", "--lab", str(lab))
    assert r.code == 2, r.output
    assert str(Path("routing") / "experiment.yaml") in r.output
    assert "runtime.method" in r.output and "no method 'Rout'" in r.output
    assert "Traceback" not in r.output
    assert not (d / "results").exists()


def test_without_the_extra_the_kind_is_refused_saying_how_to_install_it():
    out = subprocess.run([sys.executable, "-c", f"""
import sys
sys.modules["grpc"] = None  # not installed
from ix.domain.errors import ConfigError
from ix.runtimes import RuntimeContext, build_runtime
try:
    build_runtime({{"kind": "grpc", "target": "127.0.0.1:1", "proto": {str(PROTO)!r},
                   "method": {METHOD!r}}}, RuntimeContext())
except ConfigError as exc:
    print(exc.field, "|", exc.message)
"""], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == \
        "runtime.kind | the grpc runtime needs its extra: pip install 'ix-lab[grpc]'"


def test_importing_the_runtime_does_not_import_grpc():
    out = subprocess.run([sys.executable, "-c", "import sys, ix.runtimes.grpc; "
                          "print(sorted(m for m in sys.modules if m.split('.')[0] in "
                          "('grpc', 'grpc_tools', 'google')))"],
                         capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"



def test_a_run_whose_reflected_method_is_missing_exits_2(lab):
    with serving(reflect=True) as (target, _):
        d = grpc_experiment(lab, target, method="ixtest.router.Router/Rout")
        text = (d / "experiment.yaml").read_text(encoding="utf-8")
        (d / "experiment.yaml").write_text(
            text.replace("proto: protos/router.proto", "reflection: true"), encoding="utf-8")
        r = ix_in_process("run", "--lab", str(lab), "--json", "--trials", "1",
                          env={"IX_GRPC_KEY": "key-0123456789"})
    assert r.code == 2, r.output  # a configuration failure, found on the first trial
    records = [json.loads(line) for line in
               (d / "results" / "trials.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {rec["error"]["kind"] for rec in records} == {"unknown_method"}
    assert "has no method 'Rout' (methods: Route, Watch)" in records[0]["error"]["message"]


def test_a_grpc_subject_under_load(lab):
    with serving() as (target, router):
        d = grpc_experiment(lab, target)
        text = (d / "experiment.yaml").read_text(encoding="utf-8")
        (d / "experiment.yaml").write_text(
            text.replace("trials: 2\n", "").replace("backoff_s: 0.001", "retries: 0")
            + "sensors:\n  - {kind: latency, max_ms: 5000}\n"
              "load: {rps: 20, duration_s: 0.5}\n", encoding="utf-8")
        r = ix_in_process("run", "--lab", str(lab), "--json",
                          env={"IX_GRPC_KEY": "key-0123456789"})
    assert r.code == 0, r.output
    (s,) = json.loads(r.stdout)["load"]["subjects"]
    assert s["requests"]["sent"] == 10 and s["requests"]["completed"] == 10
    assert len(router.calls) == 10 and s["verdict"] == "met"
