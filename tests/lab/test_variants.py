"""A case's `variants:` expands it into several cases (`must-001~1`, ...), checked strictly."""

import json
from pathlib import Path

import pytest

from conftest import run_ix, tree_digest, write
from ix.domain.errors import ConfigError, ConfigErrors
from ix.lab.loader import load_experiment


def _lab(lab: Path, frontmatter: str, body: str, extra_case: str = "") -> Path:
    write(lab / "exp" / "experiment.yaml",
          "name: exp\ntrials: 1\nskill: target\nruntime: {kind: mock, default_rate: 1.0}\n")
    write(lab / "exp" / "cases" / "must-001.md",
          f"---\nexpectation: must_trigger\ntags: [csv]\n{frontmatter}---\n{body}\n")
    write(lab / "exp" / "cases" / "not-001.md",
          "---\nexpectation: should_not_trigger\n---\nUnrelated.\n")
    if extra_case:
        write(lab / "exp" / "cases" / f"{extra_case}.md",
              "---\nexpectation: should_not_trigger\n---\nOther.\n")
    return lab / "exp"


def test_a_mapping_of_lists_gives_every_combination_in_key_order(lab: Path) -> None:
    exp = _lab(lab, "variants:\n  verb: [summarise, profile]\n  file: [a.csv, b.tsv, c.xlsx]\n",
               "Please {{ verb }} {{ file }}.")
    cases = {c.id: c for c in load_experiment(exp, lab).experiment.cases}
    ids = [i for i in cases if i.startswith("must-001")]
    assert ids == [f"must-001~{i}" for i in range(1, 7)]
    assert cases["must-001~1"].prompt == "Please summarise a.csv."
    assert cases["must-001~2"].prompt == "Please summarise b.tsv."
    assert cases["must-001~6"].prompt == "Please profile c.xlsx."
    third = cases["must-001~3"]
    assert third.expectation == "must_trigger" and third.tags == ("csv",)
    assert third.metadata == {"variant_of": "must-001",
                              "variant": {"verb": "summarise", "file": "c.xlsx"}}


def test_a_list_of_mappings_gives_one_case_each(lab: Path) -> None:
    exp = _lab(lab, "variants:\n  - {file: a.csv, n: 1}\n  - {file: b.tsv, n: 2}\n",
               "Look at {{ file }} ({{ n }}).")
    prompts = [c.prompt for c in load_experiment(exp, lab).experiment.cases
               if c.id.startswith("must")]
    assert prompts == ["Look at a.csv (1).", "Look at b.tsv (2)."]


@pytest.mark.parametrize(("frontmatter", "body", "said"), [
    ("variants:\n  file: [a, b]\n", "No template here.", "never uses"),
    ("variants:\n  file: [a, b]\n", "Use {{ fiel }}.", "does not set"),
    ("variants:\n  file: [a, a]\n", "Use {{ file }}.", "same prompt"),
    ("variants:\n  file: []\n", "Use {{ file }}.", "non-empty list"),
    ("variants: {}\n", "Use it.", "is empty"),
    ("variants:\n  - {a: 1}\n  - {b: 2}\n", "{{ a }}", "same variables"),
    ("variants:\n  file: [a, b]\n", "Use {{ file.__class__ }}.", "does not render"),
    ("variants:\n  file: [a, b]\n", "Use {{ file }.", "not a valid template"),
])
def test_mistakes_are_errors_naming_the_file_and_variants(lab: Path, frontmatter: str,
                                                          body: str, said: str) -> None:
    exp = _lab(lab, frontmatter, body)
    with pytest.raises((ConfigError, ConfigErrors)) as caught:
        load_experiment(exp, lab)
    text = str(caught.value)
    assert said in text and "must-001.md" in text


def test_a_variant_id_may_not_be_another_cases_id(lab: Path) -> None:
    exp = _lab(lab, "variants:\n  file: [a, b]\n", "Use {{ file }}.", extra_case="must-001~2")
    with pytest.raises((ConfigError, ConfigErrors), match="must-001~2"):
        load_experiment(exp, lab)


def test_ix_run_records_each_variant_as_a_case(lab: Path) -> None:
    exp = _lab(lab, "variants:\n  file: [a.csv, b.tsv]\n", "Summarise {{ file }}.")
    r = run_ix("run", "exp", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    probes = [p["probe_id"] for p in json.loads(r.stdout)["probe_results"]]
    assert probes == ["must-001~1", "must-001~2", "not-001"]
    lines = [json.loads(x) for x in (exp / "results" / "trials.jsonl").read_text().splitlines()]
    assert {x["probe_id"] for x in lines} == set(probes)


def test_ix_validate_exits_2_on_a_bad_variant_and_writes_nothing(lab: Path) -> None:
    _lab(lab, "variants:\n  file: [a, b]\n", "Use {{ fiel }}.")
    before = tree_digest(lab)
    r = run_ix("validate", "exp", "--lab", str(lab))
    assert r.code == 2, r.output
    assert "must-001.md" in r.output and "variants" in r.output and "Traceback" not in r.output
    assert tree_digest(lab) == before
