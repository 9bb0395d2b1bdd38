"""`probe: {kind: agent, file: probes/NAME.md}`: a probe the user writes in markdown (persona
and instructions), asked of any runtime — here a real loopback server standing in for the
Anthropic API —, seeded, recorded under results/probes/, replayed."""

import json
from pathlib import Path

from fake_llm_servers import FAKE_KEY, FakeLLMServer, text_reply

from conftest import flat, ix_in_process, run_ix, tree_digest, write

SKEPTIC = """---
name: skeptic
description: a terse engineer who doubts assistants
---
You are a senior engineer in a hurry who doubts that assistants help. You write short,
blunt requests with no greeting.
"""


def _text(request) -> str:
    text = request.body["messages"][0]["content"]
    return text if isinstance(text, str) else text[-1]["text"]


def _versions(request) -> object:
    """Two versions of the quoted request, as the persona would send them."""
    prompt = _text(request).split('Request: "', 1)[1].split('"\n\n', 1)[0]
    return text_reply(json.dumps({"prompts": [f"{prompt}. Now.", f"Just {prompt.lower()}"]}))


def _lab(lab: Path, base_url: str, config: Path, agent: str = SKEPTIC,
         probe: str = "{kind: agent, file: probes/skeptic.md, runtime: asker, n: 2}") -> Path:
    write(config / "ix" / "subjects.yaml", f"""
        asker:
          runtime: {{kind: anthropic, base_url: "{base_url}", api_key_env: P_KEY}}
          model: claude-test
        """)
    write(lab / "skills" / "csv-summary" / "SKILL.md",
          "---\nname: csv-summary\ndescription: Summarise CSV files.\n---\nBody\n")
    write(lab / "exp" / "experiment.yaml", f"""
        name: exp
        skill: csv-summary
        trials: 1
        runtime: {{kind: mock, default_rate: 1.0}}
        probe: {probe}
        """)
    write(lab / "exp" / "probes" / "skeptic.md", agent)
    write(lab / "exp" / "cases" / "must-001.md",
          "---\nexpectation: must_trigger\ntags: [csv]\n---\nSummarise sales.csv\n")
    write(lab / "exp" / "cases" / "not-001.md",
          "---\nexpectation: should_not_trigger\n---\nWrite a haiku\n")
    return lab / "exp"


def test_a_markdown_agent_rewrites_each_case_in_its_persona_once(lab: Path, tmp_path: Path):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "P_KEY": FAKE_KEY}
    with FakeLLMServer("anthropic") as api:
        api.router = _versions
        exp = _lab(lab, api.base_url, tmp_path / "config")
        first = ix_in_process("run", "exp", "--lab", str(lab), "--json", env=env)
        asked = [_text(r) for r in api.requests]
        again = ix_in_process("run", "exp", "--lab", str(lab), "--json", env=env)
        assert len(api.requests) == len(asked) == 2  # one per must / not case, then none
        # an edited persona is another probe: asked again
        write(exp / "probes" / "skeptic.md", SKEPTIC.replace("blunt", "rude"))
        edited = ix_in_process("run", "exp", "--lab", str(lab), "--json", env=env)
        assert len(api.requests) == 4
    assert first.code == again.code == edited.code == 0, first.output + edited.output
    assert all("You are a senior engineer in a hurry" in a for a in asked)  # the persona
    assert any('Request: "Summarise sales.csv"' in a for a in asked)
    ids = [p["probe_id"] for p in json.loads(first.stdout)["probe_results"]]
    assert ids == ["must-001", "not-001", "must-001~skeptic-1", "must-001~skeptic-2",
                   "not-001~skeptic-1", "not-001~skeptic-2"]
    records = sorted((exp / "results" / "probes").glob("agent-*.json"))
    assert len(records) == 2  # the first persona's and the edited one's
    cases = {c["id"]: c for c in json.loads(records[0].read_text())["cases"]} | {
        c["id"]: c for c in json.loads(records[1].read_text())["cases"]}
    made = cases["must-001~skeptic-1"]
    assert made["prompt"] == "Summarise sales.csv. Now."
    assert made["expectation"] == "must_trigger" and made["tags"] == ["csv"]
    assert made["metadata"] == {"paraphrase_of": "must-001", "probe_agent": "skeptic",
                                "generated_by": "agent"}
    assert FAKE_KEY not in records[0].read_text()


def test_an_agent_per_suite_writes_new_cases_about_the_skill(lab: Path, tmp_path: Path):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "P_KEY": FAKE_KEY}
    answer = {"must": ["Summarise q3.csv", "What columns has a.csv?"],
              "should_not": ["Plot a chart", "Merge two PDFs"]}
    with FakeLLMServer("anthropic") as api:
        api.router = lambda request: text_reply("```json\n" + json.dumps(answer) + "\n```")
        _lab(lab, api.base_url, tmp_path / "config",
             agent=SKEPTIC.replace("---\nYou", "per: suite\n---\nYou"))
        r = ix_in_process("run", "exp", "--lab", str(lab), "--json", env=env)
        [request] = [_text(q) for q in api.requests]
    assert r.code == 0, r.output
    assert "The skill under test is 'csv-summary': Summarise CSV files." in request
    results = {p["probe_id"]: p for p in json.loads(r.stdout)["probe_results"]}
    assert [i for i in results if i.startswith("skeptic-")] == [
        "skeptic-must-001", "skeptic-must-002", "skeptic-not-001", "skeptic-not-002"]
    assert results["skeptic-not-002"]["expectation"] == "should_not_trigger"


def test_bad_agent_input_is_refused_naming_the_file_and_field(lab: Path, tmp_path: Path):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "P_KEY": FAKE_KEY}
    with FakeLLMServer("anthropic") as api:
        api.router = _versions
        exp = _lab(lab, api.base_url, tmp_path / "config")
        md = exp / "probes" / "skeptic.md"
        cases = [
            (SKEPTIC.replace("name: skeptic", "nmae: skeptic"), None, f"{md}: nmae:"),
            (SKEPTIC.replace("description", "per: always\ndescription"), None, f"{md}: per:"),
            ("---\nname: skeptic\n---\n\n", None, f"{md}: body: the body is empty"),
            (SKEPTIC, "{kind: agent, file: probes/nope.md, runtime: asker}",
             "experiment.yaml: probe.file: no file 'probes/nope.md'"),
            (SKEPTIC, "{kind: agent, file: ../../outside.md, runtime: asker}",
             "experiment.yaml: probe.file: '../../outside.md' is outside the lab"),
            (SKEPTIC, "{kind: agent, file: probes/skeptic.md, runtime: asker, n: 0}",
             "experiment.yaml: probe.n:"),
            (SKEPTIC, "{kind: agent, file: probes/skeptic.md, runtime: nobody}",
             "experiment.yaml: probe.runtime: unknown runtime 'nobody'"),
        ]
        write(tmp_path / "outside.md", SKEPTIC)
        for agent, probe, said in cases:
            _lab(lab, api.base_url, tmp_path / "config", agent=agent,
                 **({"probe": probe} if probe else {}))
            before = tree_digest(lab)
            r = ix_in_process("run", "exp", "--lab", str(lab), env=env)
            assert r.code == 2 and said in flat(r.stderr), (said, r.output)
            v = ix_in_process("validate", "exp", "--lab", str(lab), env=env)
            assert v.code == 2 and said in flat(v.stderr), (said, v.output)
            assert tree_digest(lab) == before and not (exp / "results").exists()
        assert api.requests == []  # nothing was asked


def test_an_answer_that_is_not_the_json_asked_for_stops_the_real_command(lab: Path,
                                                                          tmp_path: Path):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "P_KEY": FAKE_KEY}
    with FakeLLMServer("anthropic") as api:
        api.router = lambda request: text_reply(json.dumps({"prompts": ["only one"]}))
        exp = _lab(lab, api.base_url, tmp_path / "config")
        before = tree_digest(lab)
        r = run_ix("run", "exp", "--lab", str(lab), env=env)
    assert r.code == 2, r.output
    line = flat(r.stderr)
    assert line.startswith("ix: error: ") and "experiment.yaml: probe: probe agent " \
        "'skeptic' failed on case" in line and 'asked for 2 different "prompts", got 1' in line
    assert "Traceback" not in r.stderr and "\n" not in line
    assert tree_digest(lab) == before and not (exp / "results").exists()
