"""The files a case brings to its trials' workspace (DESIGN.md §10), found when the experiment
is loaded: the experiment's `workspace.template` folder, then the case's folder
`cases/<id>/files/`, then each path of its `files:` (relative to the case file). A later file
replaces an earlier one at the same place.

Each file is hashed here, once: the hashes key the cache and the resume check, and tell the
subject's outputs from the fixtures it left alone. A symlink or a special file among them is a
configuration error (a lab from elsewhere may carry a link to the user's own files), as is a
path that climbs out of the case's folder.
"""

import hashlib
import os
import stat
from pathlib import Path, PurePosixPath

from ix.domain.errors import ConfigError
from ix.domain.workspace import Fixture
from ix.fs.paths import entry_kind, lies_within

#: The most a case's fixtures may hold together: each trial copies them all.
MAX_FIXTURE_BYTES = 256 << 20
#: The most files they may count.
MAX_FIXTURE_FILES = 10_000


def template_fixtures(experiment: Path, lab: Path, template: str, file: Path) -> list[Fixture]:
    """The files of `workspace.template` (a folder, relative to the experiment, inside the
    lab), placed at the workspace's root."""
    root = experiment / template
    field = "workspace.template"
    if not lies_within(root, lab):
        raise ConfigError(f"{template!r} is outside the lab; a template is a folder of the "
                          "lab", file=file, field=field)
    try:
        mode = os.lstat(root).st_mode
    except OSError:
        raise ConfigError(f"no folder {template!r} (relative to {experiment})", file=file,
                          field=field) from None
    if not stat.S_ISDIR(mode):
        raise ConfigError(f"{template!r} is {entry_kind(mode)}, not a folder", file=file,
                          field=field)
    return _checked(_walk(root, PurePosixPath()), file, field)


def case_fixtures(case_file: Path, case_id: str, files: list[str]) -> list[Fixture]:
    """The case's own files: its folder `<id>/files/` beside the case file, then `files:`."""
    found: list[Fixture] = []
    folder = case_file.parent / case_id / "files"
    try:
        mode = os.lstat(folder).st_mode
    except OSError:
        mode = None
    if mode is not None:
        if not stat.S_ISDIR(mode):
            raise ConfigError(f"is {entry_kind(mode)}; a case's files are a folder",
                              file=folder)
        found += _walk(folder, PurePosixPath())
    for i, given in enumerate(files):
        field = f"files[{i}]"
        place = PurePosixPath(given.replace("\\", "/"))
        if place.is_absolute() or ".." in place.parts or not place.parts \
                or place == PurePosixPath("."):
            raise ConfigError(f"{given!r} must be a path inside the case's folder (relative, "
                              "no '..'); shared files go in workspace.template",
                              file=case_file, field=field)
        source = case_file.parent / place
        try:
            mode = os.lstat(source).st_mode
        except OSError:
            raise ConfigError(f"no file or folder {given!r} beside the case file",
                              file=case_file, field=field) from None
        if stat.S_ISDIR(mode):
            found += _walk(source, place)
        elif stat.S_ISREG(mode):
            found.append(_fixture(source, place))
        else:
            raise ConfigError(f"{given!r} is {entry_kind(mode)}; a fixture is a regular file "
                              "or a folder (ix never copies through a link)", file=case_file,
                              field=field)
    return _checked(found, case_file, "files")


def _walk(root: Path, place: PurePosixPath) -> list[Fixture]:
    """Every regular file under `root` (sorted), placed under `place`; a link or a special
    file is refused, naming it."""
    out: list[Fixture] = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        raise ConfigError(f"cannot list it: {exc.strerror or exc}", file=root) from None
    for entry in entries:
        path = Path(entry.path)
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            out += _walk(path, place / entry.name)
        elif stat.S_ISREG(mode):
            out.append(_fixture(path, place / entry.name))
        else:
            raise ConfigError(f"is {entry_kind(mode)}; a workspace's files are regular files "
                              "and folders (ix never copies through a link)", file=path)
        if len(out) > MAX_FIXTURE_FILES:
            break
    return out


def _fixture(source: Path, place: PurePosixPath) -> Fixture:
    try:
        with source.open("rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
            size = os.fstat(f.fileno()).st_size
    except OSError as exc:
        raise ConfigError(f"cannot read it: {exc.strerror or exc}", file=source) from None
    return Fixture(path=place.as_posix(), source=str(source.resolve()), size=size,
                   sha256=digest)


def _checked(fixtures: list[Fixture], file: Path, field: str) -> list[Fixture]:
    if len(fixtures) > MAX_FIXTURE_FILES:
        raise ConfigError(f"more than {MAX_FIXTURE_FILES:,} files; every trial copies them "
                          "all", file=file, field=field)
    total = sum(f.size for f in fixtures)
    if total > MAX_FIXTURE_BYTES:
        raise ConfigError(f"{total / (1 << 20):,.1f} MiB of files, more than "
                          f"{MAX_FIXTURE_BYTES >> 20} MiB; every trial copies them all",
                          file=file, field=field)
    return fixtures


__all__ = ["MAX_FIXTURE_BYTES", "case_fixtures", "template_fixtures"]
