"""`probe: {kind: paraphrase}`: rewordings asked of a runtime once, recorded, replayed."""

import json
from pathlib import Path

import yaml
from fake_llm_servers import FAKE_KEY, FakeLLMServer, text_reply

from conftest import ix_in_process, run_ix, tree_digest, write


def _reword(request) -> object:
    """Two rewordings of the request's quoted prompt, as a model would answer."""
    text = request.body["messages"][0]["content"]
    text = text if isinstance(text, str) else text[-1]["text"]
    prompt = json.loads(text.split("Request: ", 1)[1].split("\n\n", 1)[0])
    return text_reply(json.dumps({"paraphrases": [f"{prompt} (please)", f"Kindly: {prompt}"]}))


def _lab(lab: Path, base_url: str, config: Path) -> Path:
    write(config / "ix" / "subjects.yaml", f"""
        rewriter:
          runtime: {{kind: anthropic, base_url: "{base_url}", api_key_env: P_KEY}}
          model: claude-test
        """)
    write(lab / "exp" / "experiment.yaml", """
        name: exp
        skill: target
        trials: 2
        runtime: {kind: mock, default_rate: 1.0}
        probe: {kind: paraphrase, n: 2, runtime: rewriter}
        """)
    write(lab / "exp" / "cases" / "must-001.md",
          "---\nexpectation: must_trigger\ntags: [csv]\n---\nSummarise sales.csv\n")
    write(lab / "exp" / "cases" / "not-001.md",
          "---\nexpectation: should_not_trigger\n---\nWrite a haiku\n")
    write(lab / "exp" / "cases" / "edge-001.md",
          "---\nexpectation: acceptable\n---\nMaybe\n")
    return lab / "exp"


def test_paraphrases_run_as_cases_and_are_asked_for_once(lab: Path, tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "P_KEY": FAKE_KEY}
    with FakeLLMServer("anthropic") as api:
        api.router = _reword
        exp = _lab(lab, api.base_url, tmp_path / "config")
        # what is recorded and replayed is under test, not the command: in process
        first = ix_in_process("run", "exp", "--lab", str(lab), "--json", env=env)
        asked = len(api.requests)
        second = ix_in_process("run", "exp", "--lab", str(lab), "--json", env=env)
        assert len(api.requests) == asked == 2  # one per must/not case, then none
    assert first.code == 0, first.output
    assert second.code == 0, second.output
    probes = [p["probe_id"] for p in json.loads(first.stdout)["probe_results"]]
    assert probes == ["must-001", "not-001", "must-001~p1", "must-001~p2", "not-001~p1",
                      "not-001~p2"]
    (record,) = (exp / "results" / "probes").glob("paraphrase-*.json")
    cases = {c["id"]: c for c in json.loads(record.read_text())["cases"]}
    assert cases["must-001~p2"]["prompt"] == "Kindly: Summarise sales.csv"
    assert cases["must-001~p2"]["expectation"] == "must_trigger"
    assert cases["must-001~p2"]["tags"] == ["csv"]
    assert cases["must-001~p2"]["metadata"] == {"paraphrase_of": "must-001",
                                                "generated_by": "paraphrase"}
    assert FAKE_KEY not in record.read_text()
    # the run folder shows the prompts it ran
    run_id = json.loads(first.stdout)["run_id"]
    spec = yaml.safe_load((exp / "results" / "runs" / run_id / "spec.yaml").read_text())
    generated = spec["config"]["cases"]["generated"]
    assert [g["id"] for g in generated] == probes[2:]
    assert generated[1] == {"id": "must-001~p2", "by": "paraphrase",
                            "prompt": "Kindly: Summarise sales.csv"}


def test_a_failed_paraphrase_is_a_named_error_and_records_nothing(lab: Path,
                                                                  tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "P_KEY": FAKE_KEY}
    with FakeLLMServer("anthropic") as api:
        api.router = lambda request: text_reply("Sure! Here are some rewordings: ...")
        exp = _lab(lab, api.base_url, tmp_path / "config")
        before = tree_digest(lab)
        r = run_ix("run", "exp", "--lab", str(lab), env=env)
    assert r.code == 2, r.output
    assert "probe" in r.stderr and "not the JSON asked for" in r.stderr
    assert "Traceback" not in r.stderr
    assert tree_digest(lab) == before and not (exp / "results").exists()
