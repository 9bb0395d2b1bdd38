"""The bad input corpus: every broken lab under `tests/bad_inputs/` is refused cleanly.

Each folder of `tests/bad_inputs/` holds a lab (`lab/`), sometimes a user config folder
(`config/`, used as `$XDG_CONFIG_HOME`), and `expect.txt`:

    # what is broken (one line)
    file: lab/exp/experiment.yaml     # the file the message must name (from the folder)
    field: runtime.activation_rates   # the field (or line) it must name
    mentions: twice                   # optional, repeatable: more text it must hold
    absent: sk-live-...               # optional, repeatable: text it must not hold (a secret)
    commands: validate run            # optional (the default), or: batch
    battery: battery.yaml             # with batch: the battery file, from the lab
    setup: huge-case                  # optional: made at test time (see SETUPS)

Huge files and symlink loops are made at test time (`setup`), not committed. For each one
`ix validate` and `ix run` (or `ix batch`) run in process (`ix_in_process`: which input is
refused with which message is logic) and must: exit 2, print nothing on stdout and exactly one
line on stderr, starting `ix: error:`, naming the file and the field, with no traceback, and
leave the folder byte for byte as it was (nothing under `results/`, no battery folder). One
entry of each kind runs in the real `ix` too, which must answer the same (`CONTRACT`).
"""

import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO, Result, flat, ix_in_process, run_ix, tree_digest

CORPUS = REPO / "tests" / "bad_inputs"
HUGE_BYTES = 17 * (1 << 20)  # above ix's 16 MiB limit for a text file


@dataclass(frozen=True)
class Expect:
    file: str
    field: str
    mentions: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    commands: tuple[str, ...] = ("validate", "run")
    battery: str | None = None
    setup: str | None = None
    what: str = ""


def read_expect(path: Path) -> Expect:
    what = ""
    values: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            what = what or line.lstrip("# ").strip()
            continue
        if not line.strip():
            continue
        key, sep, value = line.partition(": ")
        assert sep, f"{path}: not 'key: value': {line!r}"
        values.setdefault(key.strip(), []).append(value.strip())
    unknown = set(values) - {"file", "field", "mentions", "absent", "commands", "battery",
                             "setup"}
    assert not unknown, f"{path}: unknown keys {unknown}"
    return Expect(
        file=values["file"][0], field=values["field"][0],
        mentions=tuple(values.get("mentions", ())), absent=tuple(values.get("absent", ())),
        commands=tuple(values["commands"][0].split()) if "commands" in values
        else ("validate", "run"),
        battery=values.get("battery", [None])[0], setup=values.get("setup", [None])[0],
        what=what)


# --------------------------------------------------------------------------- setups

def _huge_yaml(path: Path) -> None:
    """A valid experiment.yaml padded with a long comment: huge, and nothing else wrong."""
    text = path.read_text(encoding="utf-8")
    with path.open("w", encoding="utf-8") as f:
        f.write(text)
        line = "# " + "x" * 1022 + "\n"
        for _ in range(HUGE_BYTES // len(line) + 1):
            f.write(line)


def _huge_case(path: Path) -> None:
    """A valid case whose prompt is 17 MB of text."""
    with path.open("w", encoding="utf-8") as f:
        f.write("---\nexpectation: must_trigger\n---\n")
        line = "Summarise this table please. " * 35 + "\n"
        for _ in range(HUGE_BYTES // len(line) + 1):
            f.write(line)


def _loop(link: Path, target: str) -> None:
    if link.exists() or link.is_symlink():
        link.unlink()
    link.symlink_to(target)


SETUPS = {
    "huge-experiment-yaml": lambda root: _huge_yaml(root / "lab/exp/experiment.yaml"),
    "huge-case": lambda root: _huge_case(root / "lab/exp/cases/must-001.md"),
    "experiment-yaml-loop": lambda root: _loop(root / "lab/exp/experiment.yaml",
                                               "experiment.yaml"),
    "case-loop": lambda root: _loop(root / "lab/exp/cases/loop.md", "loop.md"),
    "case-dangling": lambda root: _loop(root / "lab/exp/cases/gone.md", "nowhere/else.md"),
    "cases-loop": lambda root: _loop(root / "lab/exp/cases", "cases"),
}


# --------------------------------------------------------------------------- the corpus

def corpus() -> list[tuple[str, Expect]]:
    return [(d.name, read_expect(d / "expect.txt"))
            for d in sorted(CORPUS.iterdir()) if (d / "expect.txt").is_file()]


CASES = corpus()
#: One entry of each kind, run by the real command too: experiment.yaml not UTF-8, a case file,
#: a symlink loop made at test time, the user's config (a secret it must not print), a battery.
CONTRACT = ("experiment-not-utf8", "case-unknown-expectation", "case-symlink-loop",
            "registry-secret-value", "battery-unknown-key")


def test_the_corpus_is_large_and_well_formed():
    assert len(CASES) >= 40
    for name, expect in CASES:
        d = CORPUS / name
        assert (d / "lab").is_dir(), name
        assert expect.what, f"{name}: expect.txt says what is broken on its first line"
        assert set(expect.commands) <= {"validate", "run", "batch"}, name
        assert ("batch" in expect.commands) == (expect.battery is not None), name
        assert expect.setup is None or expect.setup in SETUPS, name
    big = [p for p in CORPUS.rglob("*") if p.is_file() and p.stat().st_size > 64 * 1024]
    assert big == [], "huge files are made at test time, not committed"
    written = [p for p in CORPUS.rglob("*") if p.name in ("results", "batteries", "audit.jsonl")]
    assert written == [], "what ix writes in a lab is not part of the corpus (an `ix` run there?)"
    assert set(CONTRACT) <= {name for name, _ in CASES}


def argv(command: str, root: Path, expect: Expect) -> list[str]:
    lab = root / "lab"
    if command == "batch":
        assert expect.battery is not None
        return ["batch", str(lab / expect.battery), "--lab", str(lab)]
    return [command, "--lab", str(lab)]


def problems_with(result: Result, expect: Expect, root: Path, before: dict[str, str]) -> list[str]:
    found = []
    if result.code != 2:
        found.append(f"exit {result.code}, not 2")
    if "Traceback" in result.output:
        found.append("a traceback")
    if result.stdout:
        found.append("something on stdout")
    message = flat(result.stderr.rstrip("\n"))  # one message, unwrapped
    if "\n" in message:
        found.append("more than one line on stderr")
    if not message.startswith("ix: error:"):
        found.append("stderr does not start with 'ix: error:'")
    # the folder's own name (e.g. `case-symlink-loop`) must not satisfy the checks below
    message = message.replace(str(root), "<folder>")
    if f"<folder>/{expect.file}" not in message:
        found.append(f"the file {expect.file!r} is not named")
    if expect.field not in message:
        found.append(f"the field {expect.field!r} is not named")
    found += [f"{m!r} is not mentioned" for m in expect.mentions if m not in message]
    found += [f"{a!r} is shown" for a in expect.absent if a in result.output]
    if tree_digest(root) != before:
        found.append("the folder changed")
    if any(p.name in ("results", "batteries") for p in root.rglob("*")):
        found.append("a results/ or batteries/ folder was created")
    return found


def prepare(name: str, expect: Expect, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / name
    shutil.copytree(CORPUS / name, root, symlinks=True,
                    ignore=shutil.ignore_patterns("expect.txt"))
    for p in (root / "config").rglob("*") if (root / "config").is_dir() else ():
        p.chmod(0o700 if p.is_dir() else 0o600)  # a user's config, private as it should be
    if expect.setup is not None:
        SETUPS[expect.setup](root)
    return root, tree_digest(root)


def env_of(root: Path) -> dict[str, str]:
    """The entry's user config (`config/`) as `$XDG_CONFIG_HOME`, else none."""
    config = root / "config" if (root / "config").is_dir() else root / "no-config"
    return {"XDG_CONFIG_HOME": str(config)}


def report_of(results: dict[str, Result], expect: Expect, root: Path,
              before: dict[str, str]) -> list[str]:
    report = []
    for command, result in results.items():
        found = problems_with(result, expect, root, before)
        if found:
            report.append(f"ix {command}: {'; '.join(found)}\n  exit {result.code}\n"
                          f"  stdout: {result.stdout[:500]!r}\n  stderr: {result.stderr[:2000]}")
    return report


@pytest.mark.parametrize(("name", "expect"), CASES, ids=[name for name, _ in CASES])
def test_bad_input_is_rejected_cleanly(name: str, expect: Expect, tmp_path: Path) -> None:
    root, before = prepare(name, expect, tmp_path)
    results = {c: ix_in_process(*argv(c, root, expect), cwd=tmp_path, env=env_of(root))
               for c in expect.commands}
    report = report_of(results, expect, root, before)
    assert not report, f"{name} ({expect.what}):\n" + "\n".join(report)


@pytest.mark.parametrize(("name", "expect"), [(n, e) for n, e in CASES if n in CONTRACT],
                         ids=[n for n, _ in CASES if n in CONTRACT])
def test_the_real_command_rejects_as_in_process(name: str, expect: Expect,
                                                tmp_path: Path) -> None:
    """The contract itself, in a subprocess (the commands side by side: each only reads); and
    `ix_in_process`, which the other entries go through, gives the same exit code, stdout and
    stderr."""
    root, before = prepare(name, expect, tmp_path)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {c: pool.submit(run_ix, *argv(c, root, expect), cwd=tmp_path,
                                  env=env_of(root)) for c in expect.commands}
        results = {c: f.result() for c, f in futures.items()}
    report = report_of(results, expect, root, before)
    assert not report, f"{name} ({expect.what}):\n" + "\n".join(report)
    for command, real in results.items():
        inner = ix_in_process(*argv(command, root, expect), cwd=tmp_path, env=env_of(root))
        assert inner == real, command

