"""`ix optimize --screen-with PROXY`: the proxy ranks each round's candidates, only the
finalists and the holdout reach the real subject, and the verdict is the real subject's.

The real subject is a loopback Messages API (`optimize_lab.lexical_route`: it routes as
`lexical` at temperature 0 would, priced), so every real call is counted at the wire; the
proxy is the `lexical` runtime. The lab is the weak-description one of `optimize_lab.py`.
"""

import json
from pathlib import Path
from typing import Any

import pytest
from fake_llm_servers import FakeLLMServer, Request
from pydantic import TypeAdapter

from ix.api.optimize import Settings, optimize
from ix.api.schemas import OptimizeSession
from ix.domain.errors import ConfigError
from ix.report.optimize import optimize_markdown, outline, screening_line
from optimize_lab import lexical_route, listed_description, make_expensive, make_lab

SKILL = "table-profile"


def _prompt(request: Request) -> str:
    return "\n".join(t for t in request.first_user_texts()
                     if not t.startswith("<system-reminder>"))


def _case_prompts(experiment: Path, ids: list[str]) -> set[str]:
    return {(experiment / "cases" / f"{i}.md").read_text().split("---\n", 2)[2].strip()
            for i in ids}


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same weak-description lab optimized twice on the same expensive subject: without
    screening, and screened with `lexical` (one finalist a round); each session's requests."""
    root = tmp_path_factory.mktemp("screening")
    out: dict[str, Any] = {}
    with FakeLLMServer("anthropic", router=lexical_route) as api:
        for name, screen in (("plain", None), ("screened", "lexical")):
            lab = make_lab(root / name)
            make_expensive(lab / "profiling", api.base_url)
            before = len(api.api_requests())
            state = optimize(lab, "profiling", Settings(screen_with=screen, finalists=1)).state
            out[name] = {"state": state, "requests": api.api_requests()[before:],
                         "experiment": lab / "profiling"}
    return out


def test_only_the_finalists_and_the_holdout_reach_the_real_subject(sessions) -> None:
    s = sessions["screened"]
    state, requests = s["state"], s["requests"]
    TypeAdapter(OptimizeSession).validate_python(state)
    screening = state["screening"]
    assert screening["name"] == "lexical" and screening["kind"] == "runtime"
    assert len(requests) == screening["real_trials"] > 0   # counted at the wire
    candidates = [c for r in state["rounds"] for c in r["candidates"]]
    finalists = {f for r in state["rounds"] for f in r["screen"]["finalists"]}
    assert len(candidates) > len(finalists) >= 1
    seen = {listed_description(r, SKILL) for r in requests}
    allowed = {state["original"]["description"]} | {
        c["description"] for c in candidates if c["id"] in finalists}
    assert seen == allowed   # a screened-out description never reached the real subject
    for c in candidates:
        assert (c["train"] is None) == (c["id"] not in finalists)
        assert c["proxy"]["f1"] is not None
    # held-out prompts reached it only with the original and the candidate judged
    holdout = _case_prompts(s["experiment"], state["split"]["holdout"])
    judged = next(c["description"] for c in candidates if c["id"] == state["best"])
    held = [r for r in requests if _prompt(r) in holdout]
    assert len(held) == 2 * len(holdout)
    assert {listed_description(r, SKILL) for r in held} == {
        state["original"]["description"], judged}


def test_the_finalists_are_the_proxys_top_k_and_the_saving_is_counted(sessions) -> None:
    state = sessions["screened"]["state"]
    n_train = len(state["split"]["train"]) * state["settings"]["trials"]
    total_saved = 0
    for r in state["rounds"]:
        screen = r["screen"]
        scores = [e["proxy_f1"] for e in screen["ranking"]]
        assert scores == sorted(scores, reverse=True)
        assert screen["finalists"] == [screen["ranking"][0]["id"]]   # --finalists 1
        by_id = {c["id"]: c for c in r["candidates"]}
        assert [by_id[e["id"]]["proxy"]["f1"] for e in screen["ranking"]] == scores
        out = len(r["candidates"]) - len(screen["finalists"])
        assert screen["saved_trials"] == out * n_train
        assert screen["real_trials"] == len(screen["finalists"]) * n_train
        assert screen["proxy_trials"] == len(r["candidates"]) * n_train
        assert r["best"] in screen["finalists"]   # chosen by the real subject, among them
        total_saved += screen["saved_trials"]
    assert state["screening"]["saved_trials"] == total_saved > 0


def test_screening_saves_real_calls_at_the_same_holdout_verdict(sessions) -> None:
    plain, screened = sessions["plain"], sessions["screened"]
    assert "screening" not in plain["state"]
    saving = screened["state"]["screening"]
    assert len(plain["requests"]) == saving["real_trials"] + saving["saved_trials"]
    assert len(screened["requests"]) < len(plain["requests"])
    a, b = plain["state"]["holdout"], screened["state"]["holdout"]
    assert a["verdict"] == b["verdict"] == "recommended"
    assert a["subjects"][0]["pairs"] == b["subjects"][0]["pairs"]
    assert plain["state"]["cost_usd"] > screened["state"]["cost_usd"] > 0
    assert plain["state"]["key"] != screened["state"]["key"]   # another session


def test_the_report_says_the_saving_in_one_line(sessions) -> None:
    state = sessions["screened"]["state"]
    saving = state["screening"]
    line = screening_line(state)
    assert line is not None and "\n" not in line
    assert f"{saving['real_trials']} real call(s) spent, {saving['saved_trials']} saved" in line
    assert line in optimize_markdown(state)
    marks = [row["mark"] for row in outline(state).rows]
    assert any(m.startswith("screened out (proxy F1 ") for m in marks)
    assert screening_line(sessions["plain"]["state"]) is None


def test_a_subject_of_the_experiment_can_be_the_proxy(tmp_path: Path) -> None:
    lab = make_lab(tmp_path / "lab")
    experiment = lab / "profiling"
    with FakeLLMServer("anthropic", router=lexical_route) as api:
        make_expensive(experiment, api.base_url)
        config = (experiment / "experiment.yaml").read_text()
        config = config.replace("- name: tp\n", "- name: cheap\n  runtime: {kind: lexical, "
                                "temperature: 0}\n  skills: [table-profile, git-helper]\n"
                                "- name: tp\n")
        (experiment / "experiment.yaml").write_text(config)
        state = optimize(lab, "profiling", Settings(screen_with="cheap", rounds=1)).state
        calls = len(api.api_requests())
    assert state["subjects"] == ["tp"]   # the proxy is no subject of the session
    assert state["screening"]["kind"] == "subject"
    assert state["screening"]["runtime"] == "lexical"
    assert calls == state["screening"]["real_trials"]
    # the proxy runs under the real subject's name: its trials draw the same seeds
    lines = [json.loads(x) for x in next((Path(state["folder"]) / "screen" / "1").glob(
        "*/results/trials.jsonl")).read_text().splitlines()]
    assert {x["subject"] for x in lines} == {"tp"}


@pytest.mark.parametrize(("settings", "field"), [
    (Settings(screen_with="nosuch"), "--screen-with"),
    (Settings(screen_with="tp"), "--screen-with"),   # the only subject with the skill
    (Settings(screen_with="lexical", finalists=0), "--finalists"),
])
def test_bad_screening_input_is_named_and_writes_nothing(tmp_path: Path, settings: Settings,
                                                         field: str) -> None:
    lab = make_lab(tmp_path / "lab")
    with pytest.raises(ConfigError) as caught:
        optimize(lab, "profiling", settings)
    assert caught.value.field == field
    assert not (lab / "profiling" / "results").exists()
