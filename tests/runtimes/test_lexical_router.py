"""The `lexical` runtime behaves like a router (issue 16, §7).

A skill's score depends on that skill and the prompt only, so skills compete through the
softmax alone: installing another skill can take activations from the skill under test but
never give it more. Word weights come from a fixed background, so one skill alone still weighs
a rare word above a common one, and a description's exclusion clauses count against it.
Only `LexicalRuntime.scores` / `.probabilities` are used here, so these tests run unchanged
against older versions of the runtime.
"""

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ix.domain.types import Subject
from ix.runtimes.lexical import NO_SKILL, LexicalRuntime
from ix.runtimes.registry import RuntimeContext, build_runtime

# Words that real descriptions and prompts share, common and rare alike.
VOCABULARY = [
    "csv", "spreadsheet", "excel", "xlsx", "pdf", "docx", "slides", "table", "column", "chart",
    "pivot", "summary", "summarise", "profile", "data", "file", "report", "clean", "missing",
    "values", "sql", "query", "slow", "index", "release", "notes", "git", "changelog",
    "statistics", "mean", "median", "trend", "sheet", "google", "api", "word", "document",
    "convert", "export", "use", "when", "user", "asks", "quick", "help", "write", "read",
    "create",
]

words = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=25).map(" ".join)
skill_names = st.sampled_from(["alpha", "beta", "gamma", "delta", "epsilon", "zeta"])


def runtime(**options) -> LexicalRuntime:
    built = build_runtime({"kind": "lexical", **options}, RuntimeContext(target_skill="target"))
    assert isinstance(built, LexicalRuntime)
    return built


def subject(*skills: dict) -> Subject:
    return Subject(name="s", config={"skills": list(skills)})


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    target=words,
    others=st.lists(st.tuples(skill_names, words), max_size=3, unique_by=lambda t: t[0]),
    competitor=st.tuples(skill_names, words),
    prompt=words,
    temperature=st.sampled_from([0.0, 0.1, 0.5, 1.0, 3.0]),
    threshold=st.sampled_from([0.0, 0.5, 2.0, 5.0]),
)
def test_adding_a_competing_skill_never_raises_the_targets_activation_probability(
    target, others, competitor, prompt, temperature, threshold
):
    name, description = competitor
    if name in {n for n, _ in others}:
        name = f"{name}-2"
    installed = [{"name": "target", "description": target}]
    installed += [{"name": n, "description": d} for n, d in others]
    rt = runtime(temperature=temperature, threshold=threshold)
    before = rt.probabilities(subject(*installed), prompt)["target"]
    after = rt.probabilities(subject(*installed, {"name": name, "description": description}),
                             prompt)["target"]
    assert after <= before + 1e-12, (before, after)


def test_the_issues_case_a_competitor_sharing_no_word_leaves_the_target_alone():
    # Before: IDF over the subject's own skills, so with one skill every word weighed the same
    # (a low score) and adding an unrelated skill raised the target's probability.
    xlsx = {"name": "xlsx", "description": "Open, edit, create or fix an .xlsx spreadsheet "
            "file: formulas, formatting, charts and pivot tables."}
    docx = {"name": "docx", "description": "Create and edit Word documents: headings, tracked "
            "changes, comments and page layout."}
    prompt = "Add a pivot table and a chart to budget.xlsx"
    rt = runtime()
    alone = rt.scores(subject(xlsx), prompt)
    together = rt.scores(subject(xlsx, docx), prompt)
    assert together["xlsx"] == alone["xlsx"]
    assert together["docx"] == 0.0
    assert rt.probabilities(subject(xlsx, docx), prompt)["xlsx"] <= (
        rt.probabilities(subject(xlsx), prompt)["xlsx"]
    )


def test_a_rare_word_weighs_more_than_a_common_one_with_a_single_skill():
    skill = {"name": "tool", "description": "Profile a csv or data file."}
    rt = runtime()
    scores = {p: rt.scores(subject(skill), p)["tool"] for p in ("my csv", "my data")}
    assert scores["my csv"] > 1.5 * scores["my data"] > 0


def test_none_is_always_a_choice_and_wins_when_no_skill_matches():
    skill = {"name": "csv-summary", "description": "Profile a CSV file."}
    rt = runtime()
    probabilities = rt.probabilities(subject(skill), "How do I centre a div with flexbox?")
    assert set(probabilities) == {"csv-summary", NO_SKILL}
    assert probabilities[NO_SKILL] > 0.9


XLSX = {
    "name": "xlsx",
    "description": "Use this skill any time a spreadsheet file is the primary input or output: "
    "open, read, edit or create .xlsx or .csv files, formulas, charts. Do NOT trigger when the "
    "primary deliverable is a Word document, HTML report, standalone Python script, database "
    "pipeline, or Google Sheets API integration, even if tabular data is involved.",
}


def test_a_do_not_trigger_clause_counts_against_the_skill():
    rt = runtime()
    sheets_api = rt.scores(subject(XLSX), "Sync this with the Google Sheets API")["xlsx"]
    assert sheets_api < 0
    # The concession ("even if tabular data is involved") counts for neither side...
    assert rt.scores(subject(XLSX), "tabular data")["xlsx"] == 0
    # ...and the positive part still routes spreadsheet work to the skill.
    prompt = "Open budget.xlsx, fix the formulas and add a chart"
    assert rt.probabilities(subject(XLSX), prompt)["xlsx"] > 0.9


def test_each_kind_of_exclusion_clause_counts_against():
    rt = runtime()
    prompt = "Fill in the pdf form"
    descriptions = [
        "Edit spreadsheets and workbooks. Do not use for pdf forms.",
        "Edit spreadsheets and workbooks. Don't use it for pdf forms.",
        "Edit spreadsheets and workbooks (not for pdf forms).",
        "Edit spreadsheets and workbooks. For pdf forms, use the pdf skill instead.",
        "Edit spreadsheets and workbooks; instead use the pdf skill for forms.",
        "Edit spreadsheets and workbooks. Never use this skill for pdf forms.",
        "Edit spreadsheets and workbooks. Do NOT use for: Word files, forms (pdf ones).",
    ]
    for description in descriptions:
        score = rt.scores(subject({"name": "sheets", "description": description}), prompt)
        assert score["sheets"] < 0, description
    # An aside that excludes nothing stays with its sentence.
    aside = {"name": "sheets", "description": "Edit spreadsheets (pdf exports too)."}
    assert rt.scores(subject(aside), prompt)["sheets"] > 0
    # "instead of" is no exclusion: the words after it are what the skill replaces.
    plain = {"name": "sheets", "description": "Fill in pdf forms instead of printing them."}
    assert rt.scores(subject(plain), prompt)["sheets"] > 0


def test_the_background_table_ships_with_ix_and_names_its_source_and_licence():
    from ix.runtimes import lexical

    table = Path(lexical.__file__).with_name("lexical_background.tsv")
    header = [line for line in table.read_text(encoding="utf-8").splitlines()
              if line.startswith("#")]
    text = " ".join(header)
    assert "scripts/lexical_background.py" in text and "wordfreq" in text and "CC BY-SA" in text
    weights = [lexical.idf(t) for t in ("us", "data", "fil", "csv", "zzzunknownzzz")]
    assert weights == sorted(weights) and weights[-2] == weights[-1] == 1.0
