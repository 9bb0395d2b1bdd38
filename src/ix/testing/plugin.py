"""The pytest plugin of ix (entry point `pytest11`, loaded by pytest in every session where
ix is installed, so it imports nothing of the engine until asked).

`--ix-lab PATH` is the lab of `assert_experiment`/`assert_goal` and of the `ix_lab` fixture;
`--ix-collect` makes each `experiment.yaml` of the lab a test item `ix:<experiment>` whose goal
must be supported; `--ix-no-rerun` reads each experiment's latest run instead of running it;
the terminal summary gets a section "ix verdicts", one line per assertion (docs/pytest.md).
"""

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import ix.api
from ix.testing._asserts import check_experiment
from ix.testing._session import SESSION

if TYPE_CHECKING:
    from ix.api import Lab

#: The `user_properties` key each assertion's line travels under (to the xdist controller).
PROPERTY = "ix verdict"

_LAB = pytest.StashKey[Path]()
#: The lines of the session's assertions, in order (the terminal summary prints them).
_HEARD: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ix", "ix experiments (docs/pytest.md)")
    group.addoption("--ix-lab", metavar="PATH", default=None,
                    help="the ix lab (a path, or a name as `ix --lab` takes it); default: "
                         "found from the working folder, as `ix` finds it")
    group.addoption("--ix-collect", action="store_true", default=False,
                    help="collect each experiment.yaml of the lab as a test item "
                         "ix:<experiment> (its goal must be supported)")
    group.addoption("--ix-rerun", dest="ix_rerun", action="store_true", default=None,
                    help="run each experiment asserted (the default)")
    group.addoption("--ix-no-rerun", dest="ix_rerun", action="store_false",
                    help="read each experiment's latest run instead of running it")


def pytest_configure(config: pytest.Config) -> None:
    SESSION.lab = config.getoption("ix_lab")
    SESSION.rerun = config.getoption("ix_rerun")
    _HEARD.clear()
    if config.getoption("ix_collect"):
        lab = _find_lab(config)
        config.stash[_LAB] = lab
        here = config.invocation_params.dir
        if not any(lab.is_relative_to((here / arg.split("::")[0]).resolve())
                   for arg in config.args):
            config.args.append(str(lab))  # the lab is collected wherever it is


def pytest_unconfigure(config: pytest.Config) -> None:
    SESSION.lab, SESSION.rerun, SESSION.heard = None, None, None


def _find_lab(config: pytest.Config) -> Path:
    try:
        return ix.api.resolve(SESSION.lab, cwd=config.invocation_params.dir)[0]
    except ix.api.ConfigError as exc:
        raise pytest.UsageError(f"--ix-collect: {exc}") from None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> "pytest.File | None":
    lab = parent.config.stash.get(_LAB, None)
    if lab is None or file_path.name != "experiment.yaml" or file_path.parent.parent != lab:
        return None
    return ExperimentFile.from_parent(parent, path=file_path)


class ExperimentFile(pytest.File):
    """An experiment's `experiment.yaml`: one item, `ix:<experiment>`."""

    def collect(self) -> Iterator[pytest.Item]:
        yield ExperimentItem.from_parent(self, name=f"ix:{self.path.parent.name}")


class ExperimentItem(pytest.Item):
    """Runs the experiment (or reads its latest run): passes when its goal is supported, or,
    without a goal, when the run completed."""

    def runtest(self) -> None:
        check_experiment(str(self.path.parent), lab=self.path.parent.parent)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, AssertionError | ix.api.IxError):
            return str(excinfo.value)  # the verdict's sentences, or what to fix
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Each assertion the test makes, as a line in its report's `user_properties`."""
    heard: list[str] = []
    SESSION.heard = lambda asserted: heard.append(asserted.line())
    try:
        return (yield)
    finally:
        SESSION.heard = None
        item.user_properties.extend((PROPERTY, line) for line in heard)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":  # on the xdist controller too: the workers' lines
        _HEARD.extend(str(v) for k, v in report.user_properties if k == PROPERTY)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    if _HEARD:
        terminalreporter.section("ix verdicts")
        for line in dict.fromkeys(_HEARD):
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def ix_lab() -> "Lab":
    """The lab as an `ix.Lab` (`--ix-lab`, else found from the working folder):
    `ix_lab.path`, `ix_lab.run(...)`, `ix_lab.results.query(...)`."""
    return ix.api.Lab(SESSION.lab)
