"""`ix ls` keeps each experiment's census (name, cases, subjects) in `.ix/census.json` and
reads it back while nothing it was read from changed: an edit in the lab, or of a file the
experiment reads from outside it, loads the experiment again (ix.api.census)."""

import json
from pathlib import Path

from conftest import case, mock_experiment, write
from ix.api import list_experiments
from ix.api.census import CENSUS_FILE

PREFIX = """\
- user: first question
- assistant: first answer
- user: second question
- assistant: second answer
"""


def _listed(lab: Path) -> dict[str, tuple[dict[str, int], list[str], str | None]]:
    _, infos = list_experiments(lab)
    return {i.path.name: (i.cases, i.subjects, i.error) for i in infos}


def test_the_census_is_kept_and_an_edit_anywhere_in_the_lab_loads_again(lab: Path):
    exp = mock_experiment(lab, "exp", n_must=2, n_not=1, n_edge=0, trials=1)
    first = _listed(lab)
    assert first == {"exp": ({"must_trigger": 2, "should_not_trigger": 1, "acceptable": 0},
                             ["target"], None)}
    kept = lab / CENSUS_FILE
    stamp = kept.stat().st_mtime_ns
    assert _listed(lab) == first and kept.stat().st_mtime_ns == stamp  # read back, not rewritten
    # what a run writes (results/) is not part of the key ...
    write(exp / "results" / "trials.jsonl", "{}\n")
    assert _listed(lab) == first and kept.stat().st_mtime_ns == stamp
    # ... a new case file is, and so is an edit that keeps the file's size
    case(exp, "must-009", "must_trigger")
    assert _listed(lab)["exp"][0]["must_trigger"] == 3
    target = exp / "cases" / "not-001.md"
    target.write_text(target.read_text().replace("should_not_trigger", "must_trigger      "))
    assert _listed(lab)["exp"][0] == {"must_trigger": 4, "should_not_trigger": 0,
                                      "acceptable": 0}


def test_a_file_read_from_outside_the_lab_is_part_of_the_key(tmp_path: Path, lab: Path):
    prefix = write(tmp_path / "elsewhere" / "prefix.yaml", PREFIX)
    mock_experiment(lab, "ctx", n_must=1, n_not=1, n_edge=0, trials=1, extra_yaml=f"""
        context:
          prefix: {prefix}
          unit: turns
          lengths: [0, 3]
        """)
    assert _listed(lab)["ctx"][1] == ["target[ctx=0]", "target[ctx=3]"]
    entry = json.loads((lab / CENSUS_FILE).read_text())["experiments"]["ctx"]
    assert entry["outside"] == [str(prefix.resolve())]
    prefix.write_text(PREFIX[:PREFIX.index("- user: second")])  # now too short for length 3
    listed = _listed(lab)["ctx"]
    (lab / CENSUS_FILE).unlink()
    assert listed == _listed(lab)["ctx"]
    assert listed[1] == [] and "context.lengths" in (listed[2] or ""), listed


def test_an_experiment_that_does_not_load_is_loaded_again_each_time(lab: Path):
    exp = mock_experiment(lab, "broken", n_must=1, n_not=1, n_edge=0, trials=1,
                          extra_yaml="trails: 3\n")
    assert "trails" in (_listed(lab)["broken"][2] or "")
    kept = json.loads((lab / CENSUS_FILE).read_text()) if (lab / CENSUS_FILE).exists() else {}
    assert "broken" not in kept.get("experiments", {})
    config = exp / "experiment.yaml"
    config.write_text(config.read_text().replace("trails: 3\n", ""))
    assert _listed(lab)["broken"][2] is None


def test_a_run_still_going_is_listed_from_its_spec(lab: Path):
    """No summary yet (a run in progress, or one that died): status and time come from
    spec.yaml, and no key of the listing is missing."""
    exp = mock_experiment(lab, "exp", n_must=1, n_not=1, n_edge=0, trials=1)
    write(exp / "results" / "runs" / "2026-11-29T12-00-00Z" / "spec.yaml",
          "status: running\nstarted_at: '2026-11-29T12:00:00.000Z'\n")
    _, (info,) = list_experiments(lab)
    assert (info.last_run, info.status, info.last_run_at, info.goal, info.headline) == \
        ("2026-11-29T12-00-00Z", "running", "2026-11-29T12:00:00.000Z", None, None)
