"""A sync prefix in object storage (`s3://`, `gs://`, `az://`) through fsspec, or a shared
folder (`file://`) through ix's own confined reads and writes.

fsspec and its backends are optional (the `sync`, `s3`, `gcs` and `azure` extras) and are
imported when a URL is opened, never when ix is. Credentials come only from the environment
or the backend's own configuration (`~/.aws`, `gcloud`, ...): a URL carrying a user name or a
password is refused, and no credential is ever passed, printed or written by ix.

Object stores have no append, no rename and no lock; `Remote.write` relies on what they do
have: a PUT appears whole or not at all. A shared folder is another matter: whoever else can
write there can plant a symlink to a file only you can read, or swap a folder for a link to
one of yours. So a `file://` prefix is not read through fsspec (whose local backend follows
links) but by `_Folder`: every folder below the prefix is opened with `O_NOFOLLOW` relative
to its parent (never by path), so nothing is read or written outside the prefix; symlinks,
FIFOs, sockets and devices are refused (listed in `Remote.refused`, never opened); a file is
written under a temporary name (`.<name>.<random>.tmp`, ignored by every listing) and linked
into place only where nothing stands (or renamed over, for the one kind of object that is
replaced: a tag).
"""

import base64
import contextlib
import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NoReturn
from urllib.parse import unquote, urlsplit

from ix.domain.errors import ConfigError, IxError
from ix.fs.paths import entry_kind

#: URL scheme -> the extra that installs its backend (`file://` needs none).
SCHEMES = {"s3": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure",
           "file": ""}
#: URL scheme -> the package fsspec needs for it (beside fsspec itself).
BACKENDS = {"s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs"}
BATCH = 32  # objects read or written at once (the async backends run them concurrently)


class RemoteError(IxError):
    """The object store refused or failed a request (no credentials, no such bucket, access
    denied, unreachable): the CLI prints it on one line and exits 2."""


@dataclass(frozen=True)
class RemoteObject:
    """One object of a listing: its path relative to the prefix, size, modification time
    (UTC, None when the backend does not say) and MD5 (hex, when the backend gives one)."""

    rel: str
    size: int
    modified: datetime | None
    md5: str | None


def check_url(url: str) -> tuple[str, str]:
    """(scheme, extra) of a sync URL, or a `ConfigError` naming `URL`. A URL holding
    credentials (a password, or a user name alone: `s3://AKIA...@bucket`) is refused
    without being echoed: it would otherwise be recorded in `spec.yaml`'s command."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if "@" in parts.netloc:
        what = "a password" if ":" in parts.netloc.rsplit("@", 1)[0] else "a user name"
        raise ConfigError(f"the URL holds {what}; credentials come only from the "
                          "environment or the backend's own configuration", field="URL")
    if "://" not in url or scheme not in SCHEMES:
        raise ConfigError(f"not a sync URL: {url!r}; use s3://BUCKET/PREFIX, gs://, az:// or "
                          "file:///PATH", field="URL")
    if scheme != "file" and not parts.netloc:
        raise ConfigError(f"{url!r} names no bucket (container)", field="URL")
    if parts.query or parts.fragment:
        raise ConfigError(f"{url!r}: a sync URL takes no query (?...) or fragment (#...)",
                          field="URL")
    if scheme == "file" and parts.netloc not in ("", "localhost"):
        raise ConfigError(f"{url!r}: a file URL is file:///ABSOLUTE/PATH", field="URL")
    return scheme, SCHEMES[scheme]


@contextmanager
def remote_faults(url: str, doing: str) -> Iterator[None]:
    """Errors of the store (the backend's own exception classes, `OSError`) as one-line
    `RemoteError`s; ix's own errors and bugs pass unchanged."""
    try:
        yield
    except IxError:
        raise
    except Exception as exc:
        module = type(exc).__module__.split(".")[0]
        if not isinstance(exc, OSError) and module not in (
                "botocore", "aiobotocore", "s3fs", "gcsfs", "google", "azure", "adlfs",
                "fsspec", "aiohttp"):
            raise
        name = type(exc).__name__
        hint = ""
        if "Credential" in name or "credential" in str(exc):
            hint = ("; set the backend's credentials in the environment (for S3: "
                    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE) or in its "
                    "own configuration")
        elif isinstance(exc, FileNotFoundError):
            hint = "; does the bucket (container) exist?"
        raise RemoteError(f"{doing} failed: {name}: {exc}{hint}", field=url) from None


class Remote:
    """The objects under one URL prefix. Paths are relative to it, with `/`.

    A `file://` folder that does not exist is made by the first write (a pull reads it as
    empty). `refused` collects the entries of a `file://` folder that are neither folders nor
    regular files (links, FIFOs, ...): relative path -> what it is, never opened."""

    def __init__(self, url: str):
        scheme, extra = check_url(url)
        self.url = url
        self.scheme = scheme
        self.refused: dict[str, str] = {}
        self._store: _Folder | _Fsspec
        if scheme == "file":
            self._store = _Folder(url, unquote(urlsplit(url).path), self.refused)
        else:
            self._store = _Fsspec(url, scheme, extra)

    @property
    def local(self) -> bool:
        return isinstance(self._store, _Folder)

    def listing(self, under: str = "") -> dict[str, RemoteObject]:
        """Every object under `under` (relative), by relative path; temporary uploads
        (a name starting with `.`) are left out."""
        with remote_faults(self.url, "listing"):
            return self._store.listing(under)

    def is_empty(self) -> bool:
        """Whether the prefix holds nothing (or does not exist yet)."""
        with remote_faults(self.url, "listing"):
            return self._store.is_empty()

    def read_if_any(self, rel: str) -> bytes | None:
        """The object's content, or None when there is none."""
        with remote_faults(self.url, "downloading"):
            return self._store.read_if_any(rel)

    def read_many(self, rels: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """(rel, content) of each object, `BATCH` at a time."""
        rels = list(rels)
        for at in range(0, len(rels), BATCH):
            chunk = rels[at:at + BATCH]
            with remote_faults(self.url, "downloading"):
                got = self._store.read_many(chunk)
            for rel in chunk:
                yield rel, got[rel]

    def read(self, rel: str) -> bytes:
        with remote_faults(self.url, "downloading"):
            return self._store.read_many([rel])[rel]

    def write_many(self, items: Mapping[str, bytes], *, replace: bool = False) -> None:
        """Put each object whole (see the module's docstring), `BATCH` at a time. In a
        `file://` folder an object that is already there is left as it is unless `replace`
        (object stores replace: ix writes there only what the listing showed missing)."""
        rels = list(items)
        for at in range(0, len(rels), BATCH):
            chunk = {r: items[r] for r in rels[at:at + BATCH]}
            with remote_faults(self.url, "uploading"):
                self._store.write_many(chunk, replace)

    def write(self, rel: str, data: bytes, *, replace: bool = False) -> None:
        self.write_many({rel: data}, replace=replace)

    def same(self, obj: RemoteObject, data: bytes) -> bool:
        """Whether the object holds `data`: sizes, then the backend's MD5 when it gives
        one, else the bytes themselves (small files only reach here)."""
        if obj.size != len(data):
            return False
        if obj.md5 is not None:
            return obj.md5 == hashlib.md5(data, usedforsecurity=False).hexdigest()
        return self.read(obj.rel) == data


class _Fsspec:
    """An object store through fsspec (s3fs, gcsfs, adlfs)."""

    def __init__(self, url: str, scheme: str, extra: str):
        try:
            import fsspec
        except ImportError:
            raise ConfigError(f"{scheme}:// needs fsspec: pip install 'ix-lab[{extra}]'",
                              field="URL") from None
        with remote_faults(url, "opening the URL"):
            try:
                fs, root = fsspec.core.url_to_fs(url)
            except ImportError:
                raise ConfigError(f"{scheme}:// needs {BACKENDS.get(scheme, 'fsspec')}: pip "
                                  f"install 'ix-lab[{extra}]'", field="URL") from None
            except ValueError as exc:  # a URL the backend cannot parse
                raise ConfigError(f"{url!r}: {exc}", field="URL") from None
        self.fs = fs
        self.root = root.rstrip("/")

    def _path(self, rel: str) -> str:
        return f"{self.root}/{rel}" if self.root else rel

    def listing(self, under: str) -> dict[str, RemoteObject]:
        base = self._path(under).rstrip("/") if under else self.root
        try:
            found = self.fs.find(base, detail=True)
        except FileNotFoundError:
            if under:
                return {}
            raise
        out = {}
        cut = len(self.root) + 1 if self.root else 0
        for path, info in found.items():
            if info.get("type") == "directory":
                continue
            rel = path[cut:] if path.startswith(self.root) else path
            if any(part.startswith(".") for part in rel.split("/")):
                continue
            out[rel] = RemoteObject(rel, int(info.get("size") or 0), _modified(info),
                                    _md5(info))
        return out

    def is_empty(self) -> bool:
        try:
            names = self.fs.ls(self.root, detail=False, refresh=True)
        except FileNotFoundError:
            return True
        return not [n for n in names if not str(n).rstrip("/").rsplit("/", 1)[-1]
                    .startswith(".")]

    def read_if_any(self, rel: str) -> bytes | None:
        try:
            data: bytes = self.fs.cat_file(self._path(rel))
        except FileNotFoundError:
            return None
        return data

    def read_many(self, rels: list[str]) -> dict[str, bytes]:
        got = self.fs.cat([self._path(r) for r in rels], on_error="raise")
        return {rel: got[self._path(rel)] for rel in rels}

    def write_many(self, items: Mapping[str, bytes], replace: bool) -> None:
        self.fs.pipe({self._path(r): d for r, d in items.items()})


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) \
    | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
    | getattr(os, "O_CLOEXEC", 0)
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) \
    | getattr(os, "O_CLOEXEC", 0)


class _Folder:
    """A shared folder, confined (see the module's docstring). The prefix's own path is the
    user's choice and is resolved once; below it, no link is ever followed."""

    def __init__(self, url: str, path: str, refused: dict[str, str]):
        self.url = url
        self.refused = refused
        self.root = os.path.realpath(path)

    def _folder(self, parts: list[str], create: bool = False) -> int:
        """A descriptor of the folder `parts` below the root, each opened relative to its
        parent without following a link: `FileNotFoundError` when one is missing (and not
        `create`), `RemoteError` when one is a link or not a folder."""
        fd = os.open(self.root, _DIR_FLAGS & ~getattr(os, "O_NOFOLLOW", 0))
        try:
            for n, part in enumerate(parts):
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=fd)
                try:
                    inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        self._refuse("/".join(parts[:n + 1]), part, fd)
                    raise
                os.close(fd)
                fd = inner
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _refuse(self, rel: str, name: str, dir_fd: int) -> NoReturn:
        try:
            what = entry_kind(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except OSError:
            what = "not what it was a moment ago"
        self.refused[rel] = what
        raise RemoteError(f"{rel}: is {what}; ix reads and writes a shared folder only "
                          "through real folders and regular files (nothing behind a link)",
                          field=self.url)

    def listing(self, under: str) -> dict[str, RemoteObject]:
        parts = [p for p in under.split("/") if p]
        try:
            fd = self._folder(parts)
        except FileNotFoundError:
            if under:
                return {}
            raise
        except RemoteError:  # a link (now in `refused`): nothing under it is listed
            if under:
                return {}
            raise
        out: dict[str, RemoteObject] = {}
        try:
            self._walk(fd, "/".join(parts), out)
        finally:
            os.close(fd)
        return out

    def _walk(self, fd: int, rel: str, out: dict[str, RemoteObject]) -> None:
        with os.scandir(fd) as entries:
            found = sorted(entries, key=lambda e: e.name)
        for entry in found:
            if entry.name.startswith("."):
                continue
            path = f"{rel}/{entry.name}" if rel else entry.name
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                try:
                    inner = os.open(entry.name, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:  # replaced by a link meanwhile
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        self.refused[path] = "a symbolic link"
                        continue
                    raise
                try:
                    self._walk(inner, path, out)
                finally:
                    os.close(inner)
            elif stat.S_ISREG(st.st_mode):
                out[path] = RemoteObject(path, st.st_size,
                                         datetime.fromtimestamp(st.st_mtime, UTC), None)
            else:
                self.refused[path] = entry_kind(st.st_mode)

    def is_empty(self) -> bool:
        try:
            with os.scandir(self.root) as entries:
                return not any(not e.name.startswith(".") for e in entries)
        except FileNotFoundError:
            return True

    def read_if_any(self, rel: str) -> bytes | None:
        try:
            return self._read(rel)
        except FileNotFoundError:
            return None

    def read_many(self, rels: list[str]) -> dict[str, bytes]:
        return {rel: self._read(rel) for rel in rels}

    def _read(self, rel: str) -> bytes:
        *parts, name = rel.split("/")
        folder = self._folder(parts)
        try:
            try:
                fd = os.open(name, _READ_FLAGS, dir_fd=folder)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    self._refuse(rel, name, folder)
                raise
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    self._refuse(rel, name, folder)
                with os.fdopen(os.dup(fd), "rb") as f:
                    return f.read()
            finally:
                os.close(fd)
        finally:
            os.close(folder)

    def write_many(self, items: Mapping[str, bytes], replace: bool) -> None:
        """Each object written; one whose folder is a link (or not a folder) is not, and is
        left in `refused` for the caller to report: the rest still go."""
        for rel, data in items.items():
            with contextlib.suppress(RemoteError):
                self._write(rel, data, replace)

    def _write(self, rel: str, data: bytes, replace: bool) -> None:
        *parts, name = rel.split("/")
        os.makedirs(self.root, exist_ok=True)
        folder = self._folder(parts, create=True)
        tmp = f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, _NEW_FLAGS, 0o666, dir_fd=folder)
            try:
                with os.fdopen(os.dup(fd), "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())  # the name must not appear before the bytes
            finally:
                os.close(fd)
            if replace:  # renaming over a link replaces the link, never what it points at
                os.rename(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
            elif not _link_new(tmp, name, folder):
                mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
                if not stat.S_ISREG(mode):
                    self.refused[rel] = entry_kind(mode)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=folder)
            os.close(folder)


def _link_new(tmp: str, name: str, folder: int) -> bool:
    """`tmp` under `name` in `folder`, only where nothing stands there (a hard link fails
    when the name exists, link or not: nothing is replaced); whether it was put there. Where
    the file system has no hard links, a rename, after checking the name is free."""
    try:
        os.link(tmp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
        return True
    except FileExistsError:
        return False  # written meanwhile by someone else (a segment: the same bytes)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                             errno.EMLINK, errno.ENOSYS):
            raise
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
        return False
    except FileNotFoundError:
        os.rename(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        return True


def _modified(info: Mapping[str, Any]) -> datetime | None:
    for key in ("LastModified", "last_modified", "updated", "mtime"):
        value = info.get(key)
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        if isinstance(value, int | float):
            return datetime.fromtimestamp(value, UTC)
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
    return None


def _md5(info: Mapping[str, Any]) -> str | None:
    """The object's MD5 where the backend states it: S3's ETag of a single-part upload (a
    multipart one has a `-N` suffix and is no MD5), GCS's base64 `md5Hash`."""
    etag = str(info.get("ETag") or info.get("etag") or "").strip('"')
    if len(etag) == 32 and all(c in "0123456789abcdef" for c in etag.lower()):
        return etag.lower()
    raw = info.get("md5Hash")
    if isinstance(raw, str):
        try:
            return base64.b64decode(raw).hex()
        except ValueError:
            return None
    return None


__all__ = ["BACKENDS", "BATCH", "SCHEMES", "Remote", "RemoteError", "RemoteObject", "check_url",
           "remote_faults"]
