"""Every command that writes, on a full disk and on a read-only lab (issue 14, item 10).

Each writing command meets both faults in turn and then none: a full disk (a real
`RLIMIT_FSIZE` of 0 bytes on the `ix` process: no file can grow, as on a disk with no room
left) and a read-only lab (real permissions; as root the `ix` process runs without
`CAP_DAC_OVERRIDE`, see test_storage_faults.py). Under a fault the command prints one
`ix: error:` line naming the file, the cause and what to do, no traceback, exits 2 — or 0
when it only reads and reading still works (a read-only lab keeps answering `ix results`,
`ix query` and `ix report`) — and leaves every file of the lab, of the output folder and of
the user's config byte for byte as it was, without a temporary file or an empty folder.
With the fault gone, the same command succeeds.
"""

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result, _ix_argv, flat, ix_in_process, mock_experiment
from faults_support import faulty as fault
from faults_support import no_bytecode, set_writable

HINT = "Make room or fix permissions"
INDEX = Path(".ix") / "index"  # the query index: a cache, rebuilt from the trial logs


class Place:
    """One case's copy of the populated lab, with an output folder and a user config."""

    def __init__(self, root: Path):
        self.root = root
        self.lab, self.out, self.config = root / "lab", root / "out", root / "config"
        (root / "tmp").mkdir(exist_ok=True)

    def ix(self, *args: str, pre: Callable[[], None] | None = None,
           ) -> subprocess.CompletedProcess[str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
        env = {**clean, "XDG_CONFIG_HOME": str(self.config), "NO_COLOR": "1",
               "COLUMNS": "200", "TMPDIR": str(self.root / "tmp")}
        names = {"lab": self.lab, "out": self.out, "root": self.root}
        if any("{run}" in a for a in args):
            names["run"] = self.run_id
        argv = [a.format(**names) for a in args]
        return subprocess.run([*_ix_argv(), *argv, "--lab", str(self.lab)],
                              env=no_bytecode(env) if pre else env, preexec_fn=pre,
                              capture_output=True, text=True, timeout=180, cwd=self.root)

    def prepare(self, *args: str) -> Result:
        """`ix` for a test's set-up (no fault; not the command under test): the same argv,
        environment and working folder as `ix`, run in this process (`ix_in_process`)."""
        names = {"lab": self.lab, "out": self.out, "root": self.root}
        if any("{run}" in a for a in args):
            names["run"] = self.run_id
        argv = [a.format(**names) for a in args]
        return ix_in_process(*argv, "--lab", str(self.lab), cwd=self.root,
                             env={"XDG_CONFIG_HOME": str(self.config),
                                  "TMPDIR": str(self.root / "tmp")})

    @property
    def run_id(self) -> str:
        return next((self.lab / "exp" / "results" / "runs").iterdir()).name

    def state(self) -> dict[str, str]:
        """Every file and folder of the lab, the output folder and the config (a file with
        the bytes it holds); the query index is a cache, left out."""
        found: dict[str, str] = {}
        for top in (self.lab, self.out, self.config):
            for p in sorted(top.rglob("*")):
                rel = p.relative_to(self.root)
                if p.relative_to(top).parts[:2] == INDEX.parts and top == self.lab:
                    continue
                found[str(rel)] = p.read_bytes().hex() if p.is_file() else "folder"
        return found

    def temporary_files(self) -> list[str]:
        return [str(p) for top in (self.lab, self.out, self.config) for p in top.rglob("*")
                if p.name.endswith(".tmp")]

    def set_read_only(self, read_only: bool) -> None:
        for top in (self.lab, self.out, self.config):
            set_writable(top, not read_only)


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab with one run (its cache entries, a tag, an annotation, the audit log), a battery
    file, an empty output folder and a trial file to import; no query index yet, so reading
    the trials must first write it."""
    root = tmp_path_factory.mktemp("populated")
    place = Place(root)
    mock_experiment(place.lab, "exp", rates={"must-001": 1.0, "must-002": 0.5}, trials=2)
    (place.lab / "nightly.yaml").write_text("name: nightly\nexperiments: [exp]\nseeds: 1\n"
                                            "trials: 1\n", encoding="utf-8")
    place.out.mkdir()
    place.config.mkdir()
    for args in (("run", "--cache"), ("tag", "{run}", "baseline"),
                 ("annotate", "{run}", "a first note")):
        r = place.prepare(*args)
        assert r.code == 0, r.stderr
    shutil.copy(place.lab / "exp" / "results" / "trials.jsonl", root / "import.jsonl")
    shutil.rmtree(place.lab / INDEX, ignore_errors=True)
    return root


#: name -> (arguments, exit code on a full disk, on a read-only lab). Exit 0: the command
#: only reads, and reading still works; 2: it had to write.
COMMANDS: dict[str, tuple[tuple[str, ...], int, int]] = {
    "run": (("run",), 2, 2),
    "run --cache": (("run", "--cache"), 2, 2),
    "batch": (("batch", "{lab}/nightly.yaml"), 2, 2),
    "import jsonl": (("import", "{root}/import.jsonl", "--format", "jsonl",
                      "--experiment", "imported"), 2, 2),
    "export jsonl": (("export", "{run}", "--format", "jsonl", "--out", "{out}/x.jsonl"), 2, 2),
    "export json": (("export", "{run}", "--format", "json", "--out", "{out}/x.json"), 2, 2),
    "export csv": (("export", "{run}", "--format", "csv", "--out", "{out}/x.csv"), 2, 2),
    "export parquet": (("export", "{run}", "--format", "parquet", "--out", "{out}/x.parquet"),
                       2, 2),
    "export inspect": (("export", "{run}", "--format", "inspect", "--out", "{out}/logs"), 2, 2),
    "report --out table": (("report", "--out", "{out}/r.txt"), 2, 2),
    "report --out md": (("report", "--format", "md", "--out", "{out}/r.md"), 2, 2),
    "report --out json": (("report", "--format", "json", "--out", "{out}/r.json"), 2, 2),
    "report --out html": (("report", "--format", "html", "--out", "{out}/r.html"), 2, 2),
    "report html (run folder)": (("report", "--format", "html"), 2, 2),
    "leaderboard --out": (("leaderboard", "--format", "md", "--out", "{out}/lb.md"), 2, 2),
    "tag": (("tag", "{run}", "best"), 2, 2),
    "tag --delete": (("tag", "--delete", "baseline"), 2, 2),
    "annotate run": (("annotate", "{run}", "a note on the run"), 2, 2),
    "annotate case": (("annotate", "{run}", "must-001", "a note on a case"), 2, 2),
    "cache clear": (("cache", "clear", "--yes"), 0, 2),  # removing files needs no room
    "new": (("new", "fresh", "--runtime", "mock", "--no-input"), 2, 2),
    "subjects add": (("subjects", "add", "mine", "--runtime", "mock"), 2, 2),
    "results": (("results",), 2, 0),  # read-only: the index goes to a per-user temp folder
    "query": (("query", "SELECT count(*) AS n FROM trials"), 2, 0),
    "report": (("report",), 0, 0),
    "ls": (("ls",), 0, 0),
    "validate": (("validate",), 0, 0),
}


#: Commands that succeed on a full disk by removing files (and only remove them).
SHRINKS = {"cache clear": Path("lab") / ".ix" / "cache"}


def check_fault(place: Place, name: str, r: subprocess.CompletedProcess[str], code: int,
                before: dict[str, str]) -> None:
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == code, r.stderr
    errors = [line for line in flat(r.stderr).splitlines() if line.startswith("ix: error:")]
    if code == 2:
        [line] = errors
        assert HINT in line, line
        assert str(place.root) in line, line  # it names the file
        assert ".tmp" not in line, line  # the file a user knows, not a temporary one
        assert any(cause in line for cause in ("File too large", "Permission denied")), line
    else:
        assert errors == []
    assert place.temporary_files() == []
    after = place.state()
    if code == 0 and name in SHRINKS:
        gone = set(before) - set(after)
        assert gone and all(Path(k).is_relative_to(SHRINKS[name]) for k in gone)
        assert after == {k: v for k, v in before.items() if k not in gone}
    else:
        assert after == before


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_writing_command_fails_cleanly_on_a_full_disk_and_a_read_only_lab(
        name: str, populated: Path, tmp_path: Path) -> None:
    args, on_full_disk, on_read_only = COMMANDS[name]
    shutil.copytree(populated, tmp_path / "case", symlinks=True)
    place = Place(tmp_path / "case")
    before = place.state()

    place.set_read_only(True)
    try:
        read_only = place.ix(*args, pre=fault(read_only=True))
    finally:
        place.set_read_only(False)
    check_fault(place, name, read_only, on_read_only, before)

    full = place.ix(*args, pre=fault(file_size=0))
    check_fault(place, name, full, on_full_disk, before)

    # the fault gone, the same command works: in process, as the command's contract (its
    # exit code, message and files under each fault) is what the two real `ix` above test
    again = place.prepare(*args)
    assert again.code == 0, again.stderr
    assert "Traceback" not in again.stderr
    assert place.temporary_files() == []


def test_reading_a_read_only_lab_still_works_and_exports_elsewhere(populated, tmp_path):
    """A read-only lab is read as usual (its index goes to a per-user temporary folder), and
    exported to a writable folder; nothing in it changes."""
    shutil.copytree(populated, tmp_path / "case", symlinks=True)
    place = Place(tmp_path / "case")
    set_writable(place.lab, False)
    try:
        before = place.state()
        ro = fault(read_only=True)
        query = place.ix("query", "SELECT count(*) AS n FROM trials", "--format", "json",
                         pre=ro)
        csv = place.ix("export", "{run}", "--format", "csv", "--out", "{out}/x.csv", pre=ro)
        logs = place.ix("export", "{run}", "--format", "inspect", "--out", "{out}/logs",
                        pre=ro)
        after = place.state()
    finally:
        set_writable(place.lab, True)
    assert query.returncode == 0, query.stderr
    assert json.loads(query.stdout)[0]["n"] == 6 * 2  # 6 cases run (not the acceptable one)
    assert csv.returncode == 0 and logs.returncode == 0, csv.stderr + logs.stderr
    assert (place.out / "x.csv").read_text().count("\n") == 1 + 6 * 2
    assert len(list((place.out / "logs").iterdir())) == 1
    lab_only = {k: v for k, v in after.items() if not k.startswith("out")}
    assert lab_only == {k: v for k, v in before.items() if not k.startswith("out")}


def test_an_up_to_date_index_is_read_on_a_full_disk(populated, tmp_path):
    """Reading needs no room once the index is current: `ix results` and `ix query` answer;
    `--format json`, which DuckDB writes through a temporary file, is one clean error."""
    shutil.copytree(populated, tmp_path / "case", symlinks=True)
    place = Place(tmp_path / "case")
    assert place.prepare("results").code == 0  # the index, brought up to date
    before = place.state()
    full = fault(file_size=0)
    table = place.ix("results", pre=full)
    query = place.ix("query", "SELECT count(*) AS n FROM trials", pre=full)
    streamed = place.ix("results", "--format", "json", pre=full)
    assert table.returncode == 0 and "must-001" in table.stdout, table.stderr
    assert query.returncode == 0 and "12" in query.stdout, query.stderr
    assert streamed.returncode == 2 and "Traceback" not in streamed.stderr, streamed.stderr
    [line] = [x for x in flat(streamed.stderr).splitlines() if x.startswith("ix: error:")]
    assert HINT in line and ("File too large" in line or "temporary" in line), line
    assert place.state() == before and place.temporary_files() == []


def test_an_append_cut_short_by_a_full_disk_is_taken_back(populated, tmp_path):
    """A limit that lets a line begin but not end: the annotation fails and its half line is
    taken back; a tag is written but its audit line does not fit, so the audit log keeps
    exactly the bytes it had (no torn line) and the tag stands, with a warning."""
    shutil.copytree(populated, tmp_path / "case", symlinks=True)
    place = Place(tmp_path / "case")
    notes = place.lab / "exp" / "results" / "runs" / place.run_id / "annotations.jsonl"
    audit = place.lab / "audit.jsonl"
    kept_notes, kept_audit = notes.read_bytes(), audit.read_bytes()

    r = place.ix("annotate", "{run}", "x" * 400, pre=fault(file_size=len(kept_notes) + 20))
    assert r.returncode == 2, r.stderr
    [line] = [x for x in flat(r.stderr).splitlines() if x.startswith("ix: error:")]
    assert f"{notes}: File too large; the annotation was not written" in line
    assert notes.read_bytes() == kept_notes and audit.read_bytes() == kept_audit

    assert len(kept_audit) > 600  # tags.yaml (about 400 bytes) fits under the limit
    r = place.ix("tag", "{run}", "best", pre=fault(file_size=len(kept_audit) + 20))
    assert r.returncode == 0, r.stderr
    assert "could not append to the audit log" in flat(r.stderr) and "Traceback" not in r.stderr
    assert audit.read_bytes() == kept_audit
    assert "best:" in (place.lab / "tags.yaml").read_text()

    again = place.ix("annotate", "{run}", "x" * 400)
    assert again.returncode == 0, again.stderr
    lines = notes.read_bytes().splitlines()
    assert len(lines) == 2 and all(json.loads(x)["text"] for x in lines)


def test_a_failed_inspect_export_leaves_no_folder_in_the_way(populated, tmp_path):
    """The logs are written into a temporary folder that becomes --out only when complete."""
    shutil.copytree(populated, tmp_path / "case", symlinks=True)
    place = Place(tmp_path / "case")
    r = place.ix("export", "{run}", "--format", "inspect", "--out", "{out}/logs",
                 pre=fault(file_size=0))
    assert r.returncode == 2, r.stderr
    assert list(place.out.iterdir()) == []
    r = place.ix("export", "{run}", "--format", "inspect", "--out", "{out}/logs")
    assert r.returncode == 0, r.stderr
    [log] = (place.out / "logs").iterdir()
    assert json.loads(log.read_text())["eval"]["task"]
    assert oct((place.out / "logs").stat().st_mode & 0o777) != "0o700"  # an ordinary folder
