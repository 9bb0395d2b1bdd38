"""Where the lab is (`001_…` "Lab Resolution") and which experiments a command means."""

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ix.domain.errors import ConfigError

EXPERIMENT_FILE = "experiment.yaml"
_SKIP = {".git", ".venv", "venv", "node_modules", "__pycache__", "results", "artifacts"}


def is_experiment(path: Path) -> bool:
    """A folder with an `experiment.yaml` (a broken symlink counts: loading it says why)."""
    file = path / EXPERIMENT_FILE
    return file.is_file() or file.is_symlink()


def is_lab(path: Path) -> bool:
    """A lab is a directory with at least one child directory holding an `experiment.yaml`."""
    try:
        return any(child.is_dir() and is_experiment(child) for child in path.iterdir())
    except OSError:
        return False


def project_root(start: Path) -> Path:
    """The nearest ancestor holding `.git` or `pyproject.toml` (else `start` itself)."""
    for path in (start, *start.parents):
        if (path / ".git").exists() or (path / "pyproject.toml").is_file():
            return path
    return start


def find_lab(lab: str | Path | None = None, *, cwd: Path | None = None) -> Path:
    """`--lab` (a path, else a name searched from the project root), else walk up from cwd."""
    cwd = (cwd or Path.cwd()).resolve()
    if lab is not None:
        given = Path(lab).expanduser()
        candidate = given if given.is_absolute() else cwd / given
        if candidate.is_dir():
            return candidate.resolve()
        root = project_root(cwd)
        for found in _search(root, str(lab)):
            return found
        raise ConfigError(
            f"no lab {str(lab)!r}: not a directory, and no lab of that name under the project "
            f"root {root}",
            field="--lab",
        )
    for path in (cwd, *cwd.parents):
        if is_lab(path):
            return path
    raise ConfigError(
        f"no lab found in {cwd} or above it (a lab is a folder with at least one "
        f"<experiment>/{EXPERIMENT_FILE}); pass --lab PATH",
        field="--lab",
    )


def _search(root: Path, name: str, depth: int = 4) -> Iterable[Path]:
    target = Path(name)
    direct = root / target
    if direct.is_dir() and is_lab(direct):
        yield direct.resolve()
    if len(target.parts) != 1 or depth == 0:
        return
    for dirpath, dirnames, _ in os.walk(root):
        rel_depth = len(Path(dirpath).relative_to(root).parts)
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP and not d.startswith("."))
        if rel_depth >= depth:
            dirnames[:] = []
        for d in dirnames:
            path = Path(dirpath) / d
            if d == name and is_lab(path):
                yield path.resolve()


def list_experiments(lab: Path) -> list[Path]:
    """The lab's experiment directories, sorted by name."""
    return sorted(child for child in lab.iterdir() if child.is_dir() and is_experiment(child))


def select_experiments(
    lab: Path, names: Iterable[str] = (), *, cwd: Path | None = None
) -> list[Path]:
    """EXPERIMENT arguments (names in the lab or paths); none: the one cwd is in, else all."""
    cwd = (cwd or Path.cwd()).resolve()
    chosen: list[Path] = []
    for name in names:
        try:
            path = Path(name).expanduser()
        except RuntimeError:  # `~someone` who is no user here: a folder of that name
            path = Path(name)
        for candidate in (path if path.is_absolute() else cwd / path, lab / name):
            if candidate.is_dir() and is_experiment(candidate):
                chosen.append(candidate.resolve())
                break
        else:
            known = ", ".join(p.name for p in list_experiments(lab)) or "none"
            raise ConfigError(
                f"no experiment {name!r} in lab {lab} (experiments: {known})",
                field="EXPERIMENT",
            )
    if chosen:
        return list(dict.fromkeys(chosen))
    for path in (cwd, *cwd.parents):
        if path.parent == lab and is_experiment(path):
            return [path]
        if path == lab:
            break
    found = list_experiments(lab)
    if not found:
        raise ConfigError(f"lab {lab} has no experiments", field="--lab")
    return found


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    """The user's own config, `$XDG_CONFIG_HOME/ix/config.yaml` (else under ~/.config)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ix" / "config.yaml"
