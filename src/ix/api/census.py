"""What `ix ls` shows of an experiment as it stands — its name, cases by expectation,
subjects, or why it does not load — kept in the lab's `.ix/census.json` while the files it
was read from are unchanged.

Loading an experiment (experiment.yaml, every case file, the context prefix, the skills)
is most of what listing a lab costs; a listing made again with nothing edited reads the
census instead. The key is the state (path, size, modification time) of every file of the
lab outside `results/` and hidden folders, of the files the experiment reads from outside
the lab (a skill by path, a context prefix, the user config) and of ix's version: any edit
loads every experiment again. An experiment that does not load is not kept, since what it
lacks (a skill not yet written) may appear anywhere.
"""

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ix._version import __version__
from ix.domain.errors import ConfigError
from ix.fs.files import write_json_atomic
from ix.fs.resolve import EXPERIMENT_FILE, user_config_path

if TYPE_CHECKING:
    from ix.lab.loader import LoadedExperiment

#: The census of a lab, beside its query index (DESIGN.md §3: `.ix/` is ix's own).
CENSUS_FILE = Path(".ix") / "census.json"
#: The version of the file's layout: another one is read as no census.
FORMAT = 1


@dataclass(frozen=True)
class Census:
    """An experiment as `ix ls` shows it; `error` says why it does not load."""

    name: str
    cases: dict[str, int]
    subjects: list[str]
    error: str | None = None


def census(experiments: list[Path], lab: Path) -> Iterator[tuple[Path, Census]]:
    """Each experiment's census, kept ones read back while the lab is unchanged."""
    key = _lab_state(lab)
    kept = _read(lab, key)
    fresh: dict[str, dict[str, Any]] = {}
    for path in experiments:
        entry = kept.get(path.name)
        if entry is not None and _outside_state(entry["outside"]) == entry["outside_state"]:
            fresh[path.name] = entry
            yield path, Census(**entry["census"])
            continue
        try:
            loaded = _load(path, lab)
        except ConfigError as exc:
            yield path, Census(path.name, {}, [], error=exc.render())
            continue
        found = _census_of(loaded)
        outside = _outside(loaded, lab)
        fresh[path.name] = {"census": asdict(found), "outside": outside,
                            "outside_state": _outside_state(outside)}
        yield path, found
    if fresh != kept:
        with contextlib.suppress(OSError):  # a lab one cannot write to is listed all the same
            write_json_atomic(lab / CENSUS_FILE, {"format": FORMAT, "key": key,
                                                  "experiments": fresh})


def _load(path: Path, lab: Path) -> "LoadedExperiment":
    """`load_experiment`, imported only when an experiment must be loaded: the loader (YAML,
    the lab's schema) is most of what importing `ix ls` would cost."""
    from ix.lab.loader import load_experiment

    return load_experiment(path, lab)


def _census_of(loaded: "LoadedExperiment") -> Census:
    exp = loaded.experiment
    counts = {e: sum(1 for c in exp.cases if c.expectation == e)
              for e in ("must_trigger", "should_not_trigger", "acceptable")}
    return Census(exp.name, counts, [s.name for s in exp.subjects])


def _read(lab: Path, key: str) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads((lab / CENSUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key \
            or not isinstance(data.get("experiments"), dict):
        return {}
    return {name: e for name, e in data["experiments"].items() if _well_formed(e)}


def _well_formed(entry: object) -> bool:
    """A kept entry as `census` writes one (anything else: loaded again)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("outside"), list) \
            or not isinstance(entry.get("outside_state"), list):
        return False
    c = entry.get("census")
    return (isinstance(c, dict) and set(c) == {"name", "cases", "subjects", "error"}
            and isinstance(c["name"], str) and c["error"] is None
            and isinstance(c["cases"], dict)
            and all(isinstance(n, int) for n in c["cases"].values())
            and isinstance(c["subjects"], list)
            and all(isinstance(s, str) for s in c["subjects"])
            and all(isinstance(p, str) for p in entry["outside"]))


def _lab_state(lab: Path) -> str:
    """A digest of ix's version, the user config's state and every file of the lab but
    what ix writes (`results/` of an experiment, hidden folders such as `.ix/`)."""
    h = hashlib.sha256(f"{FORMAT} {__version__}\n".encode())
    h.update(_state(user_config_path()).encode())
    for root, dirs, files in os.walk(lab):
        here = Path(root)
        experiment = EXPERIMENT_FILE in files
        dirs[:] = sorted(d for d in dirs
                         if not d.startswith(".") and not (experiment and d == "results"))
        for name in sorted(files):
            if not name.startswith("."):
                path = here / name
                h.update(f"{path.relative_to(lab)}\0{_state(path)}\n".encode())
    return h.hexdigest()


def _outside(loaded: "LoadedExperiment", lab: Path) -> list[str]:
    """The files the experiment was read from outside the lab: skills given by path, a
    context prefix."""
    found = {str(skill["path"]) for s in loaded.experiment.subjects
             for skill in s.config.get("skills") or () if isinstance(skill, dict)
             and "path" in skill}
    spec = loaded.spec.context
    if spec is not None and not spec.prefix.startswith("builtin:"):
        found.add(str((loaded.path / spec.prefix).resolve()))
    return sorted(p for p in found if not Path(p).resolve().is_relative_to(lab.resolve()))


def _outside_state(paths: object) -> list[str]:
    return [_state(Path(p)) for p in paths] if isinstance(paths, list) else []


def _state(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return "-"
    return f"{st.st_size} {st.st_mtime_ns}"
