"""The `lexical` runtime: a BM25 skill router with a seeded softmax, used as an offline baseline."""

import asyncio

import pytest

from ix.domain.errors import ConfigError, TrialError
from ix.domain.types import Subject
from ix.eval.models import EvalCase, EvalObservation, Turn
from ix.runtimes.lexical import (
    NO_SKILL,
    LexicalOptions,
    LexicalRuntime,
    skill_score,
    stem,
    tokenize,
)
from ix.runtimes.registry import RuntimeContext, build_runtime, get_kind, validate_options

CSV = {
    "name": "csv-summary",
    "description": "Summarise and profile a CSV file: columns, types, missing values and basic "
    "statistics. Use when the user asks to summarise or profile a CSV file.",
    "path": "skills/csv-summary/SKILL.md",
}
RELEASE = {
    "name": "git-release-notes",
    "description": "Draft release notes or a changelog from git history between tags. Use when "
    "the user asks to write release notes or update the changelog.",
    "path": "skills/git-release-notes/SKILL.md",
}
SQL = {
    "name": "sql-tuning",
    "description": "Diagnose and speed up slow SQL queries, read EXPLAIN plans, suggest indexes. "
    "Use when the user says a query is slow.",
    "path": "skills/sql-tuning/SKILL.md",
}
SUBJECT = Subject(name="three", config={"skills": [CSV, RELEASE, SQL]})

SUMMARY_PROMPT = "Can you summarise sales.csv for me: its columns and missing values?"
UNRELATED_PROMPT = "How do I centre a div with flexbox?"
# Shares one word ("csv") with csv-summary: a near-miss whose outcome varies at temperature > 0.
NEAR_MISS_PROMPT = "Add a button that downloads the table as csv."


def runtime(**options) -> LexicalRuntime:
    context = RuntimeContext(target_skill="csv-summary")
    built = build_runtime({"kind": "lexical", **options}, context)
    assert isinstance(built, LexicalRuntime)
    return built


def case(prompt: str) -> EvalCase:
    return EvalCase(id="c-001", prompt=prompt, expectation="must_trigger")


def invoke(rt: LexicalRuntime, prompt: str, subject: Subject = SUBJECT, *, seed: int = 0,
           attempt: int = 0) -> EvalObservation:
    return asyncio.run(rt.invoke(subject, case(prompt), seed=seed, attempt=attempt))


def called(obs: EvalObservation) -> str | None:
    return obs.tool_calls[0].input["skill"] if obs.tool_calls else None


def activation_rate(rt: LexicalRuntime, prompt: str, subject: Subject, skill: str, n: int = 300
                    ) -> float:
    return sum(called(invoke(rt, prompt, subject, seed=s)) == skill for s in range(n)) / n


def test_matching_prompt_activates_its_skill_at_temperature_zero():
    obs = invoke(runtime(temperature=0), SUMMARY_PROMPT)
    assert obs.tool_calls[0].name == "Skill"
    assert called(obs) == "csv-summary"
    assert obs.content == "Using the csv-summary skill."


def test_unrelated_prompt_calls_no_skill():
    obs = invoke(runtime(temperature=0), UNRELATED_PROMPT)
    assert obs.tool_calls == ()
    assert obs.content == "Answered directly."


def test_each_skill_wins_the_prompts_written_for_it():
    rt = runtime(temperature=0)
    assert called(invoke(rt, "Write the release notes since the last tag")) == "git-release-notes"
    assert called(invoke(rt, "This SQL query is slow, here is the EXPLAIN plan")) == "sql-tuning"


def test_same_seed_and_attempt_give_the_same_observation():
    rt = runtime(temperature=1.0)
    for seed in range(20):
        first = invoke(rt, NEAR_MISS_PROMPT, seed=seed, attempt=1)
        assert invoke(rt, NEAR_MISS_PROMPT, seed=seed, attempt=1) == first
        assert invoke(runtime(temperature=1.0), NEAR_MISS_PROMPT, seed=seed, attempt=1) == first


def test_different_attempts_of_one_trial_can_differ():
    rt = runtime(temperature=1.0)
    seed = 12345
    outcomes = {called(invoke(rt, NEAR_MISS_PROMPT, seed=seed, attempt=a)) for a in range(50)}
    assert {"csv-summary", None} <= outcomes


def test_different_seeds_vary_at_positive_temperature():
    rate = activation_rate(runtime(temperature=1.0), NEAR_MISS_PROMPT, SUBJECT, "csv-summary")
    assert 0.05 < rate < 0.95


def test_temperature_zero_is_deterministic_across_seeds_and_attempts():
    rt = runtime(temperature=0)
    for prompt in (SUMMARY_PROMPT, UNRELATED_PROMPT, NEAR_MISS_PROMPT):
        observations = {
            invoke(rt, prompt, seed=s, attempt=a).model_dump_json()
            for s in range(10)
            for a in range(3)
        }
        assert len(observations) == 1


def test_temperature_zero_breaks_ties_by_name():
    twins = Subject(name="twins", config={"skills": [
        {"name": "b-csv", "description": "profile a csv file"},
        {"name": "a-csv", "description": "profile a csv file"},
    ]})
    rt = runtime(temperature=0, threshold=0.0)
    assert called(invoke(rt, "profile my csv file", twins)) == "a-csv"


def test_a_skill_must_beat_the_threshold_outright_at_temperature_zero():
    rt = runtime(temperature=0, threshold=0.0)
    assert called(invoke(rt, UNRELATED_PROMPT)) is None


def test_a_better_matching_competitor_takes_activations_from_the_target():
    prompt = "Summarise the columns of this CSV file and plot a chart of each column."
    alone = Subject(name="alone", config={"skills": [CSV, RELEASE]})
    competitor = {
        "name": "csv-charts",
        "description": "Plot a chart of each column of a CSV file. Use when the user asks to "
        "plot or chart the columns of a CSV file.",
    }
    crowded = Subject(name="crowded", config={"skills": [CSV, RELEASE, competitor]})

    greedy = runtime(temperature=0)
    assert called(invoke(greedy, prompt, alone)) == "csv-summary"
    assert called(invoke(greedy, prompt, crowded)) == "csv-charts"

    sampled = runtime(temperature=1.0)
    before = activation_rate(sampled, prompt, alone, "csv-summary")
    after = activation_rate(sampled, prompt, crowded, "csv-summary")
    assert after < before - 0.2
    p_before = sampled.probabilities(alone, prompt)["csv-summary"]
    assert sampled.probabilities(crowded, prompt)["csv-summary"] < p_before


def test_scores_and_probabilities_are_inspectable():
    rt = runtime(threshold=1.25, temperature=0.5)
    scores = rt.scores(SUBJECT, SUMMARY_PROMPT)
    assert list(scores) == ["csv-summary", "git-release-notes", "sql-tuning", NO_SKILL]
    assert scores[NO_SKILL] == 1.25
    assert scores["csv-summary"] > scores["sql-tuning"]
    probabilities = rt.probabilities(SUBJECT, SUMMARY_PROMPT)
    assert sum(probabilities.values()) == pytest.approx(1.0)
    assert max(probabilities, key=probabilities.__getitem__) == "csv-summary"
    assert runtime(temperature=0).probabilities(SUBJECT, SUMMARY_PROMPT)["csv-summary"] == 1.0


def test_skills_option_restricts_the_candidates():
    rt = runtime(temperature=0, skills=["git-release-notes", "sql-tuning"])
    assert called(invoke(rt, SUMMARY_PROMPT)) != "csv-summary"
    assert set(rt.scores(SUBJECT, SUMMARY_PROMPT)) == {"git-release-notes", "sql-tuning", NO_SKILL}


def test_skills_option_naming_a_skill_the_subject_lacks_is_a_trial_error():
    with pytest.raises(TrialError) as err:
        invoke(runtime(skills=["csv-sumary"]), SUMMARY_PROMPT)
    assert err.value.kind == "unknown_skill"
    assert "csv-sumary" in err.value.message


@pytest.mark.parametrize("config", [{}, {"skills": []}])
def test_subject_without_skills_is_a_no_skills_trial_error(config):
    with pytest.raises(TrialError) as err:
        invoke(runtime(), SUMMARY_PROMPT, Subject(name="bare", config=config))
    assert err.value.kind == "no_skills"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"temperature": -0.1}, "runtime.temperature"),
        ({"temprature": 0.5}, "runtime.temprature"),
        ({"b": 1.5}, "runtime.b"),
        ({"skills": "csv-summary"}, "runtime.skills"),
    ],
)
def test_bad_options_are_config_errors_naming_the_field(spec, field):
    with pytest.raises(ConfigError) as err:
        validate_options({"kind": "lexical", **spec})
    assert err.value.field == field


def test_unknown_key_error_lists_the_allowed_keys():
    with pytest.raises(ConfigError) as err:
        validate_options({"kind": "lexical", "bogus": 1})
    for key in ("threshold", "temperature", "k1", "b", "skills"):
        assert key in err.value.message


def test_registered_with_defaults():
    kind = get_kind("lexical")
    assert kind.options is LexicalOptions
    assert kind.default_concurrency == 100
    assert "not an LLM" in kind.summary
    defaults = LexicalOptions()
    assert (defaults.k1, defaults.b, defaults.skills) == (1.2, 0.75, None)
    assert 1.0 <= defaults.threshold <= 2.0
    assert defaults.temperature > 0


def test_tokenizer_lowercases_drops_stop_words_and_stems_both_sides_alike():
    assert tokenize("Summarising the CSV files") == tokenize("summarise a csv file")
    assert stem("queries") == stem("query")
    assert stem("indexes") == stem("index")
    assert stem("tagged") == stem("tags") == "tag"
    assert stem("speed") == "speed"  # not "spe": -ed is kept when the stem would end in e
    assert tokenize("the of and") == ()


def test_each_skill_is_tokenized_once_and_scored_once_per_prompt():
    from ix.runtimes import lexical

    lexical._document.cache_clear()
    lexical.skill_score.cache_clear()
    rt = runtime()
    for seed in range(5):
        invoke(rt, SUMMARY_PROMPT, seed=seed)
        invoke(rt, UNRELATED_PROMPT, seed=seed)
    assert lexical._document.cache_info().misses == 3
    assert lexical.skill_score.cache_info().misses == 6


def test_earlier_user_text_dilutes_a_skills_score_by_its_length():
    """The word-weighted average over the user's messages: unrelated earlier text lowers
    the score in proportion to its words; without history the score is the prompt's."""
    rt = build_runtime({"kind": "lexical", "temperature": 0}, RuntimeContext())
    subject = Subject(name="s", config={"skills": [
        {"name": "csv-summary", "description": "Summarize CSV files: columns and means."}]})
    prompt = "Summarize the columns of sales.csv"
    alone = rt.scores(subject, prompt)["csv-summary"]
    assert alone == skill_score("csv-summary", "Summarize CSV files: columns and means.", prompt)
    earlier = ["Let us fix the failing login test in the auth module first"]
    diluted = rt.scores(subject, prompt, earlier)["csv-summary"]
    n_prompt, n_earlier = len(tokenize(prompt)), len(tokenize(earlier[0]))
    assert diluted == pytest.approx(alone * n_prompt / (n_prompt + n_earlier))
    case = EvalCase(id="c", prompt=prompt, expectation="must_trigger",
                    history=(Turn(role="user", content=earlier[0]),
                             Turn(role="assistant", content="Summarize CSV columns, sure.")))
    # the assistant's words are not read; the earlier user words are
    assert rt.scores(subject, prompt, [earlier[0]]) == rt.scores(subject, prompt, earlier)
    obs_plain = asyncio.run(rt.invoke(subject, EvalCase(id="c", prompt=prompt,
                                                        expectation="must_trigger")))
    obs_talked = asyncio.run(rt.invoke(subject, case))
    assert obs_plain.tool_calls and not obs_talked.tool_calls  # below the threshold now


def test_a_trial_records_why_it_was_routed_the_scores_threshold_and_matched_words():
    """`observation.meta.routing`: the best skills with their scores, the threshold, and the
    stems (with the words they came from) whose shares add up to each score."""
    rt = runtime(temperature=0)
    obs = invoke(rt, "Don't summarise it, I'll write the release notes for v2 myself")
    routing = obs.meta["routing"]
    assert routing["chosen"] == called(obs) == "git-release-notes"
    assert (routing["threshold"], routing["temperature"], routing["scored"]) == (2.0, 0.0, 3)
    scores = rt.scores(SUBJECT, "Don't summarise it, I'll write the release notes for v2 myself")
    skills = {s["skill"]: s for s in routing["skills"]}
    assert list(skills) == ["git-release-notes", "csv-summary"]   # sql-tuning matched nothing
    for name, s in skills.items():
        assert s["score"] == pytest.approx(scores[name], abs=1e-4)
        assert sum(t["share"] for t in s["terms"]) == pytest.approx(s["score"], abs=1e-3)
    assert {t["term"]: t["words"] for t in skills["csv-summary"]["terms"]} == {
        "summaris": ["summarise"]}
    assert ["release"] in [t["words"] for t in skills["git-release-notes"]["terms"]]
    unrelated = invoke(rt, UNRELATED_PROMPT).meta["routing"]
    assert unrelated["chosen"] is None and unrelated["skills"] == []


def test_routing_shares_follow_the_history_weighting():
    """With earlier user messages, each stem's share is weighted as the score is."""
    rt = runtime(temperature=0)
    earlier = "Let us talk about the garden and the weather for a while today"
    stimulus = EvalCase(id="c-001", prompt=SUMMARY_PROMPT, expectation="must_trigger",
                        history=(Turn(role="user", content=earlier),
                                 Turn(role="assistant", content="Sure.")))
    obs = asyncio.run(rt.invoke(SUBJECT, stimulus, seed=0, attempt=0))
    [csv] = [s for s in obs.meta["routing"]["skills"] if s["skill"] == "csv-summary"]
    diluted = rt.scores(SUBJECT, SUMMARY_PROMPT, [earlier])["csv-summary"]
    assert csv["score"] == pytest.approx(diluted, abs=1e-4) and diluted < skill_score(
        CSV["name"], CSV["description"], SUMMARY_PROMPT)
    assert sum(t["share"] for t in csv["terms"]) == pytest.approx(diluted, abs=1e-3)
