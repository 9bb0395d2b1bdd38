"""`ix.eval.suggestions`: control suggestions, on experiments built in memory."""

import pytest

from ix.domain.types import Subject
from ix.eval.models import EvalCase, Experiment
from ix.eval.suggestions import prompt_idea, suggest_controls

SIBLINGS = [("csv-summary", "Summarise CSV files: columns, types, counts."),
            ("spreadsheet-insights", "Find trends in spreadsheet data and CSV files: columns, "
                                     "counts."),
            ("pdf", "Extract text and tables from PDF files, fill forms."),
            ("data-cleaning", "Clean tabular data. Use when the user asks to dedupe a CSV "
                              "file or fix its types.")]


def cases(n_must: int, n_not: int) -> tuple[EvalCase, ...]:
    return (*(EvalCase(id=f"must-{i}", prompt=f"do {i}", expectation="must_trigger")
              for i in range(n_must)),
            *(EvalCase(id=f"not-{i}", prompt=f"not {i}", expectation="should_not_trigger")
              for i in range(n_not)))


def subject(name: str, skills: tuple[str, ...] = ("csv-summary",), kind: str = "lexical",
            **runtime) -> Subject:
    return Subject(name=name, config={"runtime": {"kind": kind, **runtime},
                                      "skills": [{"name": s} for s in skills]})


def suggest(exp: Experiment, **kw) -> dict[str, list]:
    subjects = kw.pop("subjects", exp.subjects)
    found = suggest_controls(exp, cases=exp.cases, subjects=subjects,
                             runtimes={s.name: s.config["runtime"] for s in subjects}, **kw)
    out: dict[str, list] = {}
    for s in found:
        out.setdefault(s.code, []).append(s)
    return out


def activation(n_not: int, **kw) -> Experiment:
    return Experiment(name="e", cases=cases(10, n_not), sensor_options={"skill": "csv-summary"},
                      **{"subjects": (subject("a"),), **kw})


def test_few_should_not_cases_get_one_near_miss_per_sibling_closest_first():
    [s] = suggest(activation(3), siblings=SIBLINGS)["near-miss-cases"]
    assert s.field == "cases" and "3 should_not_trigger case(s)" in s.message
    # the sibling sharing most words with csv-summary's description comes first
    assert s.message.endswith("spreadsheet-insights, data-cleaning, pdf")
    assert s.examples[0].startswith("cases/not-spreadsheet-insights-001.md: ")
    assert all("csv-summary" not in e.split(":")[0] for e in s.examples)  # never the target


def test_enough_should_not_cases_or_no_sibling_means_no_near_miss_suggestion():
    assert "near-miss-cases" not in suggest(activation(10), siblings=SIBLINGS)
    assert "near-miss-cases" not in suggest(activation(0), siblings=SIBLINGS[:1])
    assert suggest(activation(0), siblings=SIBLINGS)["near-miss-cases"]  # absent: suggested


def test_many_siblings_are_cut_to_the_closest_and_the_message_says_so():
    many = [*SIBLINGS, *((f"tool-{i}", f"Does thing {i}.") for i in range(10))]
    [s] = suggest(activation(2), siblings=many)["near-miss-cases"]
    assert len(s.examples) == 6 and "(the 6 closest of 13)" in s.message


@pytest.mark.parametrize(("description", "idea"), [
    ("Clean tabular data. Use when the user asks to dedupe a CSV file.",
     '"Can you dedupe a CSV file?"'),
    ("Extract text and tables from PDF files, fill forms. Not for images.",
     '"Help me with this: extract text and tables from PDF files, fill forms."'),
    ("PDF forms - fill and flatten them", '"Help me with this: PDF forms."'),
    ("Use this skill whenever the user wants to merge PDFs; it keeps bookmarks.",
     '"Can you merge PDFs?"'),
    # Anthropic's docx skill: a long noun phrase, then "When Claude needs to ... for:"
    ("Comprehensive document creation, editing, and analysis with support for tracked "
     "changes, comments, formatting preservation, and text extraction. When Claude needs to "
     "work with professional documents (.docx files) for: (1) Creating new documents",
     '"Can you work with professional documents (.docx files)?"'),
    ("Comprehensive document creation, editing, and analysis with support for tracked "
     "changes, comments, formatting preservation, and text extraction.",
     '"Help me with this: comprehensive document creation, editing, and analysis with '
     'support for tracked changes."'),
])
def test_a_prompt_idea_is_the_trigger_clause_or_the_first_sentence(description, idea):
    assert prompt_idea(description) == idea


def test_an_outcome_experiment_where_every_subject_has_the_skill_gets_a_no_skill_baseline():
    exp = Experiment(name="e", cases=cases(5, 5), sensor="matcher", skill="csv-summary",
                     subjects=(subject("csv-summary"),))
    [s] = suggest(exp)["no-skill-baseline"]
    assert s.field == "skill" and "replace `skill:`" in s.message
    assert "  - name: without-csv-summary" in s.examples and "    skills: []" in s.examples
    assert "  compare: [without-csv-summary, with-csv-summary]" in s.examples
    two = Experiment(name="e", cases=cases(5, 5), sensor="check",
                     subjects=(subject("x", ("csv-summary", "pdf")), subject("y")))
    [s] = suggest(two)["no-skill-baseline"]
    assert s.field == "subjects" and "  compare: [without-csv-summary, x]" in s.examples


def test_a_subject_without_the_skill_is_the_baseline_and_activation_needs_none():
    has = Experiment(name="e", cases=cases(5, 5), sensor="check",
                     subjects=(subject("without", ()), subject("with")))
    assert "no-skill-baseline" not in suggest(has)
    # activation: a subject without the skill can never call it (never-activates)
    assert "no-skill-baseline" not in suggest(activation(10))
    # a runtime that does not read skills takes them as labels: no baseline to suggest
    mock = Experiment(name="e", cases=cases(5, 5), sensor="check",
                      subjects=(subject("m", kind="mock"),))
    assert suggest(mock) == {}


def test_a_sweep_whose_control_runs_at_a_default_in_the_grid_repeats_that_cell():
    exp = activation(10)
    [s] = suggest(exp, sweep={"temperature": [0.5, 1.0]},
                  defaults={"temperature": 0.5})["unswept-control"]
    assert s.field == "sweep.temperature" and "default 0.5" in s.message
    assert s.examples[-2:] == ("    runtime:", "      temperature: 0.5")
    # a default outside the grid: the control is an unswept reference, as a sweep wants
    assert suggest(exp, sweep={"temperature": [0.0, 1.0]}, defaults={"temperature": 0.5}) == {}
    # the control sets the key: nothing to suggest
    own = Experiment(name="e", cases=cases(10, 10), sensor_options={"skill": "csv-summary"},
                     subjects=(subject("a", temperature=1.0),))
    assert suggest(own, sweep={"temperature": [0.0, 1.0]}) == {}


def test_a_sweep_key_with_no_known_default_asks_for_the_value_compared_with():
    exp = activation(10, subjects=(subject("a", kind="anthropic"),))
    found = suggest(exp, subjects=exp.subjects, sweep={"model": ["m1", "m2"], "ablate": "skills",
                                                       "context_decay.half_life": [8, 32]})
    model, decay = found["unswept-control"]
    assert "which no report can name" in model.message and "[m1, m2]" in model.message
    assert model.examples == ("subjects:", "  - name: a", "    model: m1")
    assert decay.field == "sweep.context_decay.half_life"
    assert decay.examples[-3:] == ("    runtime:", "      context_decay:",
                                   "        half_life: 8")
