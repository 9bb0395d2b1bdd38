"""Plugin distributions made on disk, without the network: an installed-distribution layout
(`<module>.py` beside `<name>-<version>.dist-info/` with METADATA and entry_points.txt) for a
folder put on `sys.path` or `PYTHONPATH`, and a wheel (`.whl`) for `pip install`."""

import base64
import hashlib
import textwrap
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

#: An echoing runtime, a sensor that looks for a word, and a probe: what a small plugin
#: package would ship. Each rejects options it does not know (a TypeError from the call) and
#: a bad value (its own ValueError).
ECHO_MODULE = '''
"""A tiny ix plugin: the echo runtime, the contains sensor, the numbered probe."""

from ix.domain.types import Reading
from ix.eval.models import EvalObservation


class EchoRuntime:
    """Answers every case with its prompt after a fixed reply."""

    history = "unused"

    def __init__(self, *, reply="echo:"):
        if not isinstance(reply, str):
            raise ValueError(f"reply must be text, got {reply!r}")
        self.reply = reply

    async def invoke(self, subject, stimulus, *, seed=0, attempt=0):
        return EvalObservation(content=f"{self.reply} {stimulus.prompt}")


class ContainsSensor:
    def __init__(self, *, word):
        self.word = word
        self.name = "contains"

    def sense(self, interaction):
        passed = self.word in interaction.observation.content
        return [Reading(sensor_name=self.name, passed=passed, score=float(passed))]


class NumberedProbe:
    def __init__(self, *, n=2):
        self.n = n

    def generate(self):
        return [f"case {i}" for i in range(self.n)]
'''

ECHO_ENTRY_POINTS = {
    "ix.runtimes": {"echo": "ix_echo_plugin:EchoRuntime"},
    "ix.sensors": {"contains": "ix_echo_plugin:ContainsSensor"},
    "ix.probes": {"numbered": "ix_echo_plugin:NumberedProbe"},
}


def _metadata(name: str, version: str) -> str:
    return f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"


def _entry_points(groups: Mapping[str, Mapping[str, str]]) -> str:
    return "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
                   for group, eps in groups.items())


def _dist_info(name: str, version: str) -> str:
    return f"{name.replace('-', '_')}-{version}.dist-info"


def write_distribution(root: Path, name: str, version: str, modules: Mapping[str, str],
                       entry_points: Mapping[str, Mapping[str, str]]) -> Path:
    """An installed distribution in `root` (a folder for sys.path): its modules and its
    dist-info (METADATA, entry_points.txt)."""
    root.mkdir(parents=True, exist_ok=True)
    for module, code in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(code), encoding="utf-8")
    info = root / _dist_info(name, version)
    info.mkdir()
    (info / "METADATA").write_text(_metadata(name, version), encoding="utf-8")
    (info / "entry_points.txt").write_text(_entry_points(entry_points), encoding="utf-8")
    return root


def write_wheel(folder: Path, name: str, version: str, modules: Mapping[str, str],
                entry_points: Mapping[str, Mapping[str, str]]) -> Path:
    """A pure-Python wheel: no build backend needed to make it or to install it."""
    info = _dist_info(name, version)
    files = {f"{m}.py": textwrap.dedent(code) for m, code in modules.items()}
    files[f"{info}/METADATA"] = _metadata(name, version)
    files[f"{info}/entry_points.txt"] = _entry_points(entry_points)
    files[f"{info}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: ix-tests\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n")

    def record_line(path: str, data: bytes) -> str:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        return f"{path},sha256={digest},{len(data)}\n"

    record = "".join(record_line(p, text.encode()) for p, text in files.items())
    files[f"{info}/RECORD"] = record + f"{info}/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel


Distribution = Callable[[Path, str, str, Mapping[str, str], Mapping[str, Mapping[str, str]]],
                        Path]


@pytest.fixture
def distribution() -> Distribution:
    """`write_distribution`: (root, name, version, modules, entry points) -> root."""
    return write_distribution


@pytest.fixture
def echo_plugin(tmp_path: Path) -> Path:
    """The folder of an installed `ix-echo-plugin 1.0` (runtime echo, sensor contains, probe
    numbered): put it on sys.path or PYTHONPATH."""
    return write_distribution(tmp_path / "site", "ix-echo-plugin", "1.0",
                              {"ix_echo_plugin": ECHO_MODULE}, ECHO_ENTRY_POINTS)


@pytest.fixture
def echo_wheel() -> Callable[[Path, str], Path]:
    """(folder, version) -> the wheel of that version of `ix-echo-plugin`."""
    return lambda folder, version: write_wheel(folder, "ix-echo-plugin", version,
                                               {"ix_echo_plugin": ECHO_MODULE},
                                               ECHO_ENTRY_POINTS)


@pytest.fixture
def fresh_plugins() -> Iterator[Callable[[], None]]:
    """Forget the plugins this process scanned and loaded, before and after the test."""
    from ix.eval import plugins

    plugins.refresh()
    yield plugins.refresh
    plugins.refresh()
