"""`ix.fs.names` (names checked, NFC, look-alikes, injective file names) and `ix.fs.paths`
(never through a symlink, never into a FIFO, never out of the lab), in process."""

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import mock_experiment, write
from ix.domain.errors import ConfigError
from ix.fs.names import check_distinct, check_name, file_part, name_problem, skeleton
from ix.fs.paths import (
    FILE,
    FOLDER,
    UnsafePath,
    check_entry,
    inside,
    open_regular,
    readable_file,
)
from ix.lab.loader import load_experiment
from ix.store.cache import ObservationCache, entry_key
from ix.store.trials import TrialWriter, read_trials

# --------------------------------------------------------------------------- names

GOOD = ["claude-sonnet", "a b", "café", "日本語のテスト", "v1.2", "must-001", "x_y", "a~b",
        "100%", "émoji 🙂", "A", "sub[model=gpt-4o]", "a.b"]
BAD = {
    "": "empty", "   ": "whitespace only", " a": "whitespace", "a\t": "whitespace",
    "../../x": "path separators", "a/b": "path separators", "a\\b": "path separators",
    "..": "leading dot", ".hidden": "leading dot", "a..b": "'..'", "a\x00b": "U+0000",
    "a\nb": "U+000A", "a\x1b[31mb": "U+001B", "a\u200bb": "U+200B", "a\u202eb": "U+202E",
    "x" * 256: "at most 255",
}


@pytest.mark.parametrize("name", GOOD)
def test_ordinary_names_are_accepted(name):
    assert name_problem(name) is None
    assert check_name(name) == unicodedata.normalize("NFC", name)


@pytest.mark.parametrize(("name", "why"), BAD.items(), ids=[repr(n)[:20] for n in BAD])
def test_hostile_names_are_refused_naming_the_field(name, why):
    with pytest.raises(ConfigError) as info:
        check_name(name, what="subject name", file="x.yaml", field="subjects[0].name")
    assert info.value.render().startswith("x.yaml: subjects[0].name: invalid subject name")
    assert why in info.value.message


def test_a_name_is_kept_in_nfc():
    assert check_name("cafe\u0301") == "caf\u00e9"


@pytest.mark.parametrize(("a", "b"), [
    ("caf\u00e9", "cafe\u0301"),          # NFC / NFD: one name
    ("apple", "\u0430pple"),              # Cyrillic а
    ("PAY", "\u03a1\u0391\u03a5"),        # Greek capitals Ρ Α Υ
    ("Sonnet", "sonnet"),                 # letter case
    ("ﬁle", "file"),                      # a compatibility ligature
])
def test_names_that_look_alike_are_refused_as_twins(a, b):
    assert skeleton(a) == skeleton(b)
    with pytest.raises(ConfigError) as info:
        check_distinct([(a, "subjects[0].name"), (b, "subjects[1].name")], what="subject",
                       file="e.yaml")
    assert info.value.field == "subjects[1].name" and "subjects[0].name" in info.value.message


def test_names_that_merely_resemble_each_other_are_distinct():
    check_distinct([(n, f"s[{i}]") for i, n in enumerate(
        ["a b", "a_b", "a-b", "model-1", "model-l", "α-test", "b-test", "日本", "中国"])])


def test_file_parts_are_injective_and_safe():
    names = [*GOOD, "a_b", "a%20b", "a%b", "a+b", ".x", "%2Ex", "~", "x" * 150,
             "x" * 150 + "y", "日" * 60, "日" * 61, "a:b", "a*b", "CON", "a b", "A B"]
    parts = {file_part(n): n for n in names}
    assert len(parts) == len(set(names))           # no two names share a file
    for part in parts:
        assert "/" not in part and "\\" not in part and "\x00" not in part
        assert not part.startswith(".") and len(part.encode()) <= 140
        assert part.isascii()
    assert file_part("a b") == "a%20b" and file_part("a_b") == "a_b"
    assert file_part("must-001") == "must-001"     # the usual names do not change
    assert file_part("cafe\u0301") == file_part("caf\u00e9")


def test_the_loader_keeps_names_in_nfc_and_refuses_look_alike_case_ids(tmp_path):
    lab = tmp_path / "lab"
    exp = mock_experiment(lab, n_must=1, n_not=1, n_edge=0, trials=1)
    write(exp / "experiment.yaml", "name: exp\nruntime: mock\nsubjects:\n"
                                   "  - name: cafe\u0301\n  - name: tea\n"
                                   "goal:\n  hypothesis: h\n  compare: [cafe\u0301, tea]\n")
    loaded = load_experiment(exp, lab)
    assert [s.name for s in loaded.experiment.subjects] == ["caf\u00e9", "tea"]
    assert loaded.experiment.goal["compare"] == ["caf\u00e9", "tea"]
    write(exp / "cases/not-001.md", "---\nid: MUST-001\nexpectation: should_not_trigger\n---\n"
                                    "Hi\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(exp, lab)
    assert info.value.field == "id" and "looks like 'must-001'" in info.value.message


# --------------------------------------------------------------------------- paths


def test_inside_refuses_a_path_that_climbs_out_or_leaves_through_a_symlink(tmp_path):
    root = tmp_path / "lab"
    (root / "exp").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    assert inside(root, root / "exp" / "a.json") == root / "exp" / "a.json"
    with pytest.raises(UnsafePath):
        inside(root, root / "exp" / ".." / ".." / "outside" / "a.json")
    (root / "exp" / "link").symlink_to(tmp_path / "outside")
    with pytest.raises(UnsafePath):
        inside(root, root / "exp" / "link" / "a.json")


def test_open_regular_refuses_symlinks_fifos_and_folders_and_opens_nothing(tmp_path):
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    (tmp_path / "link").symlink_to(target)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    for name, what in (("link", "symbolic link"), ("fifo", "FIFO"), ("folder", "folder")):
        with pytest.raises(UnsafePath, match=what):
            open_regular(tmp_path / name, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    assert target.read_bytes() == b"keep"
    fd = open_regular(tmp_path / "new", os.O_RDWR | os.O_CREAT)
    os.close(fd)
    assert check_entry(tmp_path / "new", FILE) and check_entry(tmp_path / "folder", FOLDER)
    assert not check_entry(tmp_path / "missing", FILE)


def test_the_trial_writer_never_writes_through_a_symlink(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_bytes(b"x" * 100_000)  # no newline: the writer would cut it as torn
    (tmp_path / "results").mkdir()
    (tmp_path / "results/trials.jsonl").symlink_to(target)
    with pytest.raises(UnsafePath):
        TrialWriter(tmp_path / "results/trials.jsonl")
    assert target.read_bytes() == b"x" * 100_000


def test_readers_refuse_a_fifo_and_read_a_regular_file(tmp_path):
    os.mkfifo(tmp_path / "trials.jsonl")
    with pytest.raises(UnsafePath, match="FIFO"):
        list(read_trials(tmp_path / "trials.jsonl"))
    assert readable_file(tmp_path / "missing.jsonl") is False
    (tmp_path / "log.jsonl").write_text('{"a": 1}\n', encoding="utf-8")
    assert list(read_trials(tmp_path / "log.jsonl")) == [{"a": 1}]


def test_the_cache_refuses_a_symlinked_folder_and_deletes_nothing_through_it(tmp_path):
    lab, elsewhere = tmp_path / "lab", tmp_path / "elsewhere"
    (elsewhere / "observations" / "ab").mkdir(parents=True)
    (elsewhere / "observations" / "ab" / "mine.txt").write_text("keep", encoding="utf-8")
    (lab / ".ix").mkdir(parents=True)
    (lab / ".ix" / "cache").symlink_to(elsewhere)
    with pytest.raises(UnsafePath, match="symbolic link"):
        ObservationCache(lab).clear()
    assert (elsewhere / "observations" / "ab" / "mine.txt").read_text(encoding="utf-8") == "keep"


def test_the_cache_writes_and_clears_inside_a_real_folder(tmp_path):
    cache = ObservationCache(tmp_path)
    key = entry_key("s", {"id": "c"}, 1, 0)
    cache.put(key, {"observation": {"x": 1}})
    assert cache.get(key) == {"observation": {"x": 1}}
    assert cache.clear() == 1 and cache.get(key) is None
    assert Path(tmp_path / ".ix/cache").is_dir()


@settings(max_examples=500, deadline=None)
@given(st.text(min_size=1, max_size=300), st.text(min_size=1, max_size=300))
def test_file_part_never_maps_two_names_to_one_file(a, b):
    a, b = unicodedata.normalize("NFC", a), unicodedata.normalize("NFC", b)
    assert (file_part(a) == file_part(b)) == (a == b)
    for part in (file_part(a), file_part(b)):
        assert "/" not in part and part not in (".", "..") and not part.startswith(".")
        assert len(part.encode()) <= 140


def test_an_experiment_argument_naming_an_unknown_user_home_is_a_clean_error(tmp_path):
    from ix.fs.resolve import select_experiments

    mock_experiment(tmp_path, "~e")  # a folder named like a home folder, and no user `e`
    mock_experiment(tmp_path, "exp")
    assert select_experiments(tmp_path, ["~e"], cwd=tmp_path) == [(tmp_path / "~e").resolve()]
    try:
        select_experiments(tmp_path, ["~nosuchuser-ix"], cwd=tmp_path)
    except ConfigError as exc:
        assert exc.field == "EXPERIMENT" and "~nosuchuser-ix" in exc.message
    else:
        raise AssertionError("an unknown experiment was found")
