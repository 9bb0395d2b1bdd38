"""Shared fixtures: the real `ix` command in a subprocess, and labs written to disk."""

import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pytest
from hypothesis import settings
from rich.cells import cell_len

#: The browser fixtures (`chromium`, `watched_page`) of tests/browser/, and the echoing
#: service (`echo_server`) of the secrets tests.
pytest_plugins = ("browser_support", "secrets_support")

REPO = Path(__file__).resolve().parents[1]

# The `ix` subprocesses the tests start keep their bytecode (src/ix/__pycache__, ignored by
# git): with PYTHONDONTWRITEBYTECODE set, as some sandboxes do, each would compile ix anew
# (about 0.4 s), and the suite starts thousands of them.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# The width `ix_in_process` prints at is the COLUMNS it is given, as for `run_ix`: a COLUMNS of
# this process (a CI's) would become the width of ix's consoles for good when they are made.
os.environ.pop("COLUMNS", None)
# One OpenBLAS thread in the workers and each process they start: ix's arrays are small, and
# numpy and scipy (two OpenBLAS copies) would each start a thread per core at import, which
# spin a while for nothing: ~0.12 CPU-s of every `ix run` on two cores (0.70 → 0.56 s), and
# the suite is CPU-bound there. A value already set (yours, a CI's) is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Property tests draw the same examples on every run (CI's and yours): a failure is one to
# fix, never a draw that comes and goes. `HYPOTHESIS_PROFILE=explore` draws new ones.
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
EXAMPLE_LAB = REPO / "examples" / "lab"
#: Copies the example lab's routing experiments only (`shutil.copytree(..., ignore=...)`):
#: tests of CI's mechanics need no more, and the outcome example's hundred trials of programs
#: would only slow them down.
ROUTING_ONLY = shutil.ignore_patterns("results", "artifacts", "outcome", "agent")
#: The example lab's experiments whose model is a script on 127.0.0.1 that `scripts/example`
#: starts (tests/engine/test_agent_example.py starts it): left out of the copies of the lab
#: that other tests run.
NEEDS_MODEL = ("agent",)


def offline_example(*more: str) -> Callable[[Any, list[str]], set[str]]:
    """`shutil.copytree`'s `ignore` for a copy of the example lab without results (and
    `more`), and without the experiments that need the example's model (`NEEDS_MODEL`)."""
    return shutil.ignore_patterns("results", "artifacts", *NEEDS_MODEL, *more)


def _ix_argv() -> list[str]:
    exe = Path(sys.executable).parent / "ix"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ix"]


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def _ix_env(cwd: Path | None, env: Mapping[str, str] | None) -> dict[str, str]:
    """This process's environment without the user's ix settings (no `IX_*`, no user
    config, no `ix serve`), plain wide output, then `env`."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    full_env["XDG_CONFIG_HOME"] = str(Path(cwd or REPO) / ".no-user-config")
    full_env["NO_COLOR"] = "1"
    full_env["COLUMNS"] = "200"
    full_env["IX_NO_SERVE"] = "1"  # a user's `ix serve` runs their ix, not this tree's
    full_env.update(env or {})
    return full_env


def run_ix(*args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None,
           timeout: float = 120, stdin: str | None = None) -> Result:
    """Run the real `ix` command; the environment is clean of the user's ix settings.
    `stdin`: what it reads through a pipe (else it inherits the test's)."""
    proc = subprocess.run([*_ix_argv(), *args], cwd=cwd, env=_ix_env(cwd, env),
                          capture_output=True, text=True, timeout=timeout,
                          input=stdin)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def ix_in_process(*args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None,
                  ) -> Result:
    """`run_ix` without the process: the same command tree (`ix.cli.main.main`), argv,
    environment (clean of the user's ix settings, as `run_ix` makes it) and working folder, with
    stdout and stderr captured, and on that stderr what a process prints there by itself
    (`_as_a_process_shows_them`). For a test's *set-up* — the run a report test reads, the lab
    a query test attacks — and for logic such as which bad input is refused with which message,
    where the command line is not what is tested: about a second less per call than a
    subprocess (interpreter, imports). What a test asserts about a command's contract (exit
    code, output, signals, files) goes through `run_ix` at least once. An exception that
    `main` lets through (a real process would print its traceback and exit 1) is raised here,
    to fail the test. (`tests/test_conftest.py` holds the two to the same answers.)"""
    import io

    import ix.cli.output  # noqa: F401
    from ix.cli.main import main

    # ix's consoles (`ix.cli.output`, imported by the first command that prints) take a COLUMNS
    # set when they are made as their width for good; made above, outside the command's
    # environment (which has COLUMNS), they read it at each print, as a new process does at
    # its start. (This process has no COLUMNS: see the top of this file.)
    full_env = _ix_env(cwd, env)
    saved_env, saved_argv, saved_cwd = dict(os.environ), sys.argv, os.getcwd()
    # text over bytes, as a real stdout is: some commands write bytes to `sys.stdout.buffer`
    raw_out, raw_err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(raw_out, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(raw_err, encoding="utf-8", write_through=True)
    code = 0
    try:
        os.environ.clear()
        os.environ.update(full_env)
        sys.argv = ["ix", *args]
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr), \
                _as_a_process_shows_them():
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
    stdout.flush()
    stderr.flush()
    return Result(code, raw_out.getvalue().decode("utf-8"), raw_err.getvalue().decode("utf-8"))


@contextlib.contextmanager
def _as_a_process_shows_them() -> Iterator[None]:
    """What a fresh `ix` process prints on its stderr unasked, printed to `sys.stderr` in
    process too, where pytest would collect it out of sight (a stray warning is a second line
    under the one-line error): Python warnings under Python's default filters, each once per
    place, and log records of WARNING and up, which no handler takes (logging's last resort)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        (file or sys.stderr).write(
            warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():  # a fresh registry, as in a new process
        warnings.resetwarnings()
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__",
                                append=True)
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                         ResourceWarning):
            warnings.simplefilter("ignore", category, append=True)
        warnings.showwarning = show
        root.handlers.clear()
        root.setLevel(logging.WARNING)
        try:
            yield
        finally:
            root.handlers[:] = handlers
            root.setLevel(level)


@pytest.fixture
def ix():
    return run_ix


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def case(directory: Path, case_id: str, expectation: str, prompt: str = "",
         extra: str = "") -> Path:
    body = prompt or f"Prompt of {case_id}"
    return write(directory / "cases" / f"{case_id}.md",
                 f"---\nexpectation: {expectation}\n{extra}---\n{body}\n")


def mock_experiment(lab: Path, name: str = "exp", *, rates: Mapping[str, float] | None = None,
                    n_must: int = 3, n_not: int = 3, n_edge: int = 1, trials: int | None = 5,
                    extra_yaml: str = "", runtime_extra: str = "") -> Path:
    """An experiment with the mock runtime: must-NNN, not-NNN, edge-NNN cases."""
    d = lab / name
    lines = [f"name: {json.dumps(name)}", "skill: target"]  # quoted: a name of digits is text
    if trials is not None:
        lines.append(f"trials: {trials}")
    lines += ["runtime:", "  kind: mock"]
    if rates:
        lines.append("  activation_rates:")
        lines += [f"    {k}: {v}" for k, v in rates.items()]
    if runtime_extra:
        lines += ["  " + line for line in textwrap.dedent(runtime_extra).strip().splitlines()]
    write(d / "experiment.yaml", "\n".join(lines) + "\n" + textwrap.dedent(extra_yaml))
    for i in range(1, n_must + 1):
        case(d, f"must-{i:03d}", "must_trigger")
    for i in range(1, n_not + 1):
        case(d, f"not-{i:03d}", "should_not_trigger")
    for i in range(1, n_edge + 1):
        case(d, f"edge-{i:03d}", "acceptable")
    return d


def comparison_experiment(lab: Path, *, n_must: int, n_not: int, trials: int, control: float,
                          variants: Mapping[str, float], goal: str = "", name: str = "e") -> Path:
    """Mock subjects: the control activates on must cases at `control`, each variant at its
    own rate; every subject activates on should-not cases at 0.05."""
    d = lab / name
    must = [f"must-{i:03d}" for i in range(n_must)]
    nots = [f"not-{i:03d}" for i in range(n_not)]

    def subject(subject: str, p: float) -> str:
        rates = ", ".join([f"{c}: {p}" for c in must] + [f"{c}: 0.05" for c in nots])
        return f"  - name: {subject}\n    runtime: {{kind: mock, activation_rates: {{{rates}}}}}"

    subjects = [subject("control", control)] + [subject(v, p) for v, p in variants.items()]
    write(d / "experiment.yaml",
          f"name: {name}\ntrials: {trials}\nsensor: {{kind: activation, skill: a}}\n"
          "subjects:\n" + "\n".join(subjects) + "\n" + goal)
    for c in must:
        write(d / "cases" / f"{c}.md", f"---\nexpectation: must_trigger\n---\nDo {c}\n")
    for c in nots:
        write(d / "cases" / f"{c}.md", f"---\nexpectation: should_not_trigger\n---\nNot {c}\n")
    return d


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    """An empty lab folder (experiments are added by each test)."""
    d = tmp_path / "lab"
    d.mkdir()
    return d


@pytest.fixture
def example_lab(tmp_path: Path) -> Path:
    """A private copy of the bundled example lab, without any results."""
    dest = tmp_path / "example-lab"
    shutil.copytree(EXAMPLE_LAB, dest, ignore=offline_example())
    return dest


#: What differs between two runs of the same trials: their id and clock.
RUN_CLOCK = frozenset({"run_id", "started_at", "finished_at"})


def stable_summary(summary: dict) -> dict:
    """A summary without what two runs of the same trials never share: the run's id and
    clock, and the outcomes' wall-clock time per trial (`timeless`)."""
    out = {k: v for k, v in summary.items() if k not in RUN_CLOCK}
    if out.get("outcomes"):
        out["outcomes"] = timeless(out["outcomes"])
    return out


def timeless(outcomes: dict) -> dict:
    """A summary's or report's `outcomes` without the time per trial (`duration_ms`)."""
    drop = {"duration_ms"}
    return {**outcomes, "metrics": [m for m in outcomes["metrics"] if m not in drop],
            "by_subject": {s: {m: e for m, e in v.items() if m not in drop}
                           for s, v in outcomes["by_subject"].items()},
            "comparisons": [c for c in outcomes["comparisons"] if c["metric"] not in drop]}


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under `root` with the sha256 of its bytes: 'byte-for-byte unchanged' checks."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


#: What marks a test file whose tests share something made once for several of them.
_SHARED = re.compile(r"""scope\s*=\s*["'](?:class|module|package|session)["']|\bchromium\b""")


@functools.cache
def _shares_fixtures(path: str) -> bool:
    try:
        return bool(_SHARED.search((REPO / path).read_text(encoding="utf-8")))
    except OSError:
        return False


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Parallel workers (`-n`, pytest-xdist) take tests one by one, except that the tests of a
    file holding a fixture wider than one test (a run of ix, a browser, a Ray cluster) go to
    one worker together: the fixture is made once, and two workers never hold it at the same
    time (`ray stop --force` stops every cluster on the machine). The longest come first
    (`pytest_collection_modifyitems`), so that no worker starts a minute's test as the others
    finish."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    # the queue in the order `pytest_collection_modifyitems` made (the longest work first),
    # not re-sorted by the number of tests in each group
    config.option.loadscopereorder = False

    class SharedFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    return SharedFixtureScheduling(config, log)


#: Tests that the last full run (`scripts/test --record-slow`) measured at `SLOW_S` seconds or
#: more, set-up and tear-down included, each with its seconds: marked `slow`, so `scripts/test
#: --fast` leaves them out as it leaves out those marked in the code, and run longest first. A
#: test not listed counts as fast until the list is recorded again; CI runs every test either
#: way.
SLOW_LIST = REPO / "tests" / "slow_tests.txt"
SLOW_S = 1.0
#: `scripts/test --record-slow` sets it: this run's durations rewrite `SLOW_LIST`.
RECORD_SLOW = "IX_RECORD_SLOW"
_durations: dict[str, float] = {}


def _recorded_slow() -> dict[str, float]:
    """Each listed test's seconds (a line without them: `SLOW_S`)."""
    try:
        text = SLOW_LIST.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, seconds = line.partition("\t")
            try:
                found[name] = float(seconds)
            except ValueError:
                found[name] = SLOW_S
    return found


def _scope(nodeid: str) -> str:
    """What one worker runs together (`pytest_xdist_make_scheduler`): a test, or the file of
    a test that shares fixtures."""
    path = nodeid.split("::", 1)[0]
    return path if _shares_fixtures(path) else nodeid


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the recorded slow tests `slow`, and order the tests longest first by what was
    recorded (a file sharing fixtures counts as the sum of its tests, and stays together in
    its order): the workers then finish together (the greedy longest-first schedule),
    instead of one taking a minute's test last."""
    slow = _recorded_slow()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
    weight: dict[str, float] = {}
    for item in items:
        scope = _scope(item.nodeid)
        weight[scope] = weight.get(scope, 0.0) + slow.get(item.nodeid, 0.0)
    items.sort(key=lambda item: -weight[_scope(item.nodeid)])  # stable: files stay in order


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if os.environ.get(RECORD_SLOW):
        _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With `RECORD_SLOW` (in the run that collects the workers' reports, not in a worker):
    each test that ran is listed in `SLOW_LIST` with its seconds or not by this run's
    duration; the others stay as they were."""
    if not os.environ.get(RECORD_SLOW) or hasattr(session.config, "workerinput") \
            or not _durations:
        return
    kept = {t: s for t, s in _recorded_slow().items() if t not in _durations}
    slow = kept | {t: s for t, s in _durations.items() if s >= SLOW_S}
    SLOW_LIST.write_text(
        f"# tests of {SLOW_S:g} s or more and their seconds (tests/conftest.py, SLOW_LIST): "
        "written by `scripts/test --record-slow`\n"
        + "".join(f"{t}\t{slow[t]:.1f}\n" for t in sorted(slow)), encoding="utf-8")


def too_wide(text: str, width: int = 80) -> list[str]:
    """Lines wider than `width` columns, but a path (one token, or `label: /path`) printed
    whole to be pasted."""
    return [line for line in text.splitlines() if cell_len(line.rstrip()) > width
            and not re.fullmatch(r"\s*(\S+: )?/\S+", line.rstrip())]


def flat(stderr: str) -> str:
    """`stderr` with each message on one line, as grep would read it unwrapped: a message
    wrapped to the width (`ix.report.tables.hanging`) has its indented continuation lines
    joined to its first, every run of whitespace one space."""
    joined = re.sub(r"\n[ \t]+(?=\S)", " ", stderr)
    return "\n".join(" ".join(line.split()) for line in joined.splitlines())
