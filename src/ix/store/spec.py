"""`runs/<run_id>/spec.yaml`, read and written (its types: `ix.store.spec_schema`, imported
only by the type checker here: building the TypedDicts costs more than reading a spec), and
the environment a run records in it.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ix._version import __version__
from ix.fs.files import write_text_atomic
from ix.fs.yamlio import dump_yaml, load_yaml_file
from ix.store.layout import RunDir

if TYPE_CHECKING:
    from ix.eval.schemas import SpecPlugin
    from ix.store.spec_schema import RunSpec, SpecVersions


def read_spec(directory: Path) -> RunSpec:
    """`spec.yaml` as ix wrote it (not validated: a reader takes each key with `.get`, as an
    older ix may not have written it); `{}` when the file holds no mapping."""
    data = load_yaml_file(RunDir(directory).spec)
    return cast("RunSpec", data if isinstance(data, dict) else {})


def write_spec(directory: Path, spec: RunSpec, *, create: bool = True) -> Path:
    """`spec.yaml`, atomically. `create=False`: the run folder must exist (one deleted
    during the run is an error, not recreated)."""
    path = RunDir(directory).spec
    write_text_atomic(path, dump_yaml(spec), parents=create, shared=True)
    return path


_PACKAGES = ("pydantic", "numpy", "scipy", "anthropic", "openai", "claude-agent-sdk", "httpx")


def environment(plugins: Sequence[SpecPlugin] = ()) -> SpecVersions:
    """What produced a run: ix, Python, the host, the versions of the packages that
    runtimes use (those installed), and the plugins the run uses (none: no `plugins` key)."""
    packages = {name: found for name in _PACKAGES if (found := _version(name)) is not None}
    versions: SpecVersions = {
        "ix": __version__, "python": platform.python_version(),
        "platform": platform.platform(terse=True), "executable": sys.executable,
        "host": platform.node(), "packages": packages}
    if plugins:
        versions["plugins"] = list(plugins)
    return versions


def _version(name: str) -> str | None:
    """The installed version of the package `name` (None: not installed), from the `Version`
    header of its metadata: `importlib.metadata.version` parses the whole file (a long
    description, for some) as an email, which cost a run ~0.1 s before its first trial."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution(name)
    except PackageNotFoundError:
        return None
    for line in (dist.read_text("METADATA") or dist.read_text("PKG-INFO") or "").splitlines():
        if line.startswith("Version:"):
            return line.removeprefix("Version:").strip()
        if not line:  # the headers end at the first empty line
            break
    return dist.version
