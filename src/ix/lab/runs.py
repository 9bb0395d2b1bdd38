"""Run folders: `results/runs/<run_id>/spec.yaml`, the exact record of how a run was made."""

import platform
import secrets
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ix.lab.results import stamp, write_text_atomic
from ix.lab.yamlio import dump_yaml, load_yaml_file

RUNS_DIR = "runs"
SPEC_FILE = "spec.yaml"


def new_run_id(started: datetime) -> str:
    """Sortable by start time and unique: `20261126T021500Z-3f9a1c`."""
    return f"{stamp(started)}-{secrets.token_hex(3)}"


def run_dir(results_dir: Path, run_id: str) -> Path:
    return results_dir / RUNS_DIR / run_id


def git_commit(path: Path) -> str | None:
    """The commit of the git checkout holding `path`, with `+dirty` if it has changes."""
    try:
        head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--", "."],
                               capture_output=True, text=True, timeout=5, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty.strip() else head


_PACKAGES = ("pydantic", "numpy", "scipy", "anthropic", "openai", "claude-agent-sdk", "httpx")


def environment() -> dict[str, Any]:
    """What produced a run: ix, Python, the host, and the versions of the packages that
    runtimes use (those installed)."""
    from importlib.metadata import PackageNotFoundError, version

    from ix._version import __version__

    packages = {}
    for name in _PACKAGES:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            continue
    return {"ix": __version__, "python": platform.python_version(),
            "platform": platform.platform(terse=True), "executable": sys.executable,
            "host": platform.node(), "packages": packages}


def write_spec(directory: Path, spec: dict[str, Any]) -> Path:
    path = directory / SPEC_FILE
    write_text_atomic(path, dump_yaml(spec))
    return path


def read_spec(directory: Path) -> dict[str, Any]:
    data = load_yaml_file(directory / SPEC_FILE)
    return data if isinstance(data, dict) else {}


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def find_run(lab: Path, run_id: str) -> Path:
    """The run folder of `run_id` (or a unique prefix of it) in any experiment of the lab."""
    from ix.domain.errors import ConfigError

    given = Path(run_id)
    if given.is_dir() and (given / SPEC_FILE).is_file():
        return given.resolve()
    matches = sorted(p for p in lab.glob(f"*/results/{RUNS_DIR}/{run_id}*") if p.is_dir())
    exact = [p for p in matches if p.name == run_id]
    if exact:
        return exact[0]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ConfigError(f"no run {run_id!r} in lab {lab}", field="RUN")
    raise ConfigError(f"{run_id!r} matches {len(matches)} runs: "
                      f"{', '.join(p.name for p in matches[:5])}; give more of the id",
                      field="RUN")
