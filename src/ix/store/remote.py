"""A sync prefix in object storage (`s3://`, `gs://`, `az://`, `file://`), through fsspec.

fsspec and its backends are optional (the `sync`, `s3`, `gcs` and `azure` extras) and are
imported when a URL is opened, never when ix is. Credentials come only from the environment
or the backend's own configuration (`~/.aws`, `gcloud`, ...): a URL carrying a password is
refused, and no credential is ever passed, printed or written by ix.

Object stores have no append, no rename and no lock; `Remote.write` relies on what they do
have: a PUT appears whole or not at all. A local folder (`file://`) gets the same guarantee
from a temporary name (`.<name>.<random>.tmp`, ignored by every listing) renamed into place.
"""

import base64
import hashlib
import os
import secrets
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from ix.domain.errors import ConfigError, IxError

#: URL scheme -> the extra that installs its backend.
SCHEMES = {"s3": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure",
           "file": "sync"}
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
    """(scheme, extra) of a sync URL, or a `ConfigError` naming `URL`."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if "://" not in url or scheme not in SCHEMES:
        raise ConfigError(f"not a sync URL: {url!r}; use s3://BUCKET/PREFIX, gs://, az:// or "
                          "file:///PATH", field="URL")
    if scheme != "file" and not parts.netloc:
        raise ConfigError(f"{url!r} names no bucket (container)", field="URL")
    if parts.password is not None or (scheme != "file" and ":" in parts.netloc.split("@")[0]
                                      and "@" in parts.netloc):
        raise ConfigError("the URL holds a password; credentials come only from the "
                          "environment or the backend's own configuration", field="URL")
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
    """The objects under one URL prefix. Paths are relative to it, with `/`."""

    def __init__(self, url: str):
        scheme, extra = check_url(url)
        self.url = url
        self.scheme = scheme
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
        self.local = "file" in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,))
        if self.local:
            with remote_faults(url, "creating the folder"):
                fs.makedirs(self.root, exist_ok=True)

    def _path(self, rel: str) -> str:
        return f"{self.root}/{rel}" if self.root else rel

    def listing(self, under: str = "") -> dict[str, RemoteObject]:
        """Every object under `under` (relative), by relative path; temporary uploads
        (a name starting with `.`) are left out."""
        base = self._path(under).rstrip("/") if under else self.root
        with remote_faults(self.url, "listing"):
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

    def read_many(self, rels: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """(rel, content) of each object, `BATCH` at a time."""
        rels = list(rels)
        for at in range(0, len(rels), BATCH):
            chunk = rels[at:at + BATCH]
            with remote_faults(self.url, "downloading"):
                got = self.fs.cat([self._path(r) for r in chunk], on_error="raise")
            for rel in chunk:
                yield rel, got[self._path(rel)]

    def read(self, rel: str) -> bytes:
        with remote_faults(self.url, "downloading"):
            data: bytes = self.fs.cat_file(self._path(rel))
        return data

    def write_many(self, items: Mapping[str, bytes]) -> None:
        """Put each object whole (see the module's docstring), `BATCH` at a time."""
        rels = list(items)
        for at in range(0, len(rels), BATCH):
            chunk = {r: items[r] for r in rels[at:at + BATCH]}
            with remote_faults(self.url, "uploading"):
                if self.local:
                    for rel, data in chunk.items():
                        self._write_local(rel, data)
                else:
                    self.fs.pipe({self._path(r): d for r, d in chunk.items()})

    def write(self, rel: str, data: bytes) -> None:
        self.write_many({rel: data})

    def _write_local(self, rel: str, data: bytes) -> None:
        final = self._path(rel)
        folder, _, name = final.rpartition("/")
        tmp = f"{folder}/.{name}.{secrets.token_hex(4)}.tmp"
        self.fs.makedirs(folder, exist_ok=True)
        try:
            with self.fs.open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())  # the rename must not land before the bytes
            self.fs.mv(tmp, final)
        except BaseException:
            if self.fs.exists(tmp):
                self.fs.rm_file(tmp)
            raise

    def same(self, obj: RemoteObject, data: bytes) -> bool:
        """Whether the object holds `data`: sizes, then the backend's MD5 when it gives
        one, else the bytes themselves (small files only reach here)."""
        if obj.size != len(data):
            return False
        if obj.md5 is not None:
            return obj.md5 == hashlib.md5(data, usedforsecurity=False).hexdigest()
        return self.read(obj.rel) == data


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
