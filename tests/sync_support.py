"""Helpers of the sync tests (tests/sync/): the local S3's bucket as the tests see it, the
credentials they hand `ix`, and the check that no secret reached a file."""

import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ACCESS_KEY = "AKIAIXSYNCTESTKEY0001"
SECRET_KEY = "ix-sync-secret-" + uuid.uuid4().hex  # must appear in no file ix writes


@dataclass
class S3:
    endpoint: str
    bucket: str

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/team"

    def env(self, endpoint: str | None = None) -> dict[str, str]:
        """The environment `ix` gets: credentials and endpoint, and nothing to look up
        elsewhere (no config files, no instance metadata service)."""
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_ENDPOINT_URL": endpoint or self.endpoint,
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials",
                "AWS_CONFIG_FILE": "/nonexistent/config"}

    def objects(self) -> dict[str, bytes]:
        """Every object of the bucket, by key (read with boto3, not with ix)."""
        import boto3

        client = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                              aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)
        out = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
            for item in page.get("Contents", []):
                body = client.get_object(Bucket=self.bucket, Key=item["Key"])["Body"].read()
                out[item["Key"]] = body
        return out


@dataclass
class StallingProxy:
    """Forwards HTTP to `target`; once `stall_after` requests matching `marker` (method, path
    part) have been answered, every further matching request is held until `release`."""

    target: str
    marker: tuple[str, str]
    stall_after: int
    answered: int = 0
    stalled: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    url: str = ""


def files_of(*roots: Path) -> Iterator[Path]:
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                yield path


def no_secret_in(*roots: Path, extra: dict[str, bytes] | None = None) -> list[str]:
    """Files (and remote objects) holding the secret key or the access key id."""
    found = [str(p) for p in files_of(*roots)
             if SECRET_KEY.encode() in p.read_bytes() or ACCESS_KEY.encode() in p.read_bytes()]
    found += [k for k, v in (extra or {}).items()
              if SECRET_KEY.encode() in v or ACCESS_KEY.encode() in v]
    return found




def synthetic_trials(log: Path, run_id: str, lines: int, *, subject: str = "s") -> None:
    """`lines` trial lines of one run in the engine's format (cases c-0000.., 10 trials each),
    appended to `log`: a large log without running anything."""
    import json

    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as f:
        for n in range(lines):
            passed = n % 3 != 0
            f.write(json.dumps({
                "run_id": run_id, "experiment": "exp", "subject": subject,
                "probe_id": f"must-{n // 10:06d}", "trial": n % 10, "seed": n * 7919,
                "attempt": 0, "expectation": "must_trigger",
                "started_at": "2026-11-26T10:00:00.000Z", "duration_ms": 12.5,
                "observation": {"content": "Using the target skill.", "tool_calls": [
                    {"name": "Skill", "input": {"skill": "target"}}] if passed else [],
                    "duration_ms": 12.5, "tokens_input": 420, "tokens_output": 37,
                    "cost_usd": 0.0012},
                "reading": {"passed": passed, "score": 1.0 if passed else 0.0},
                "error": None}, separators=(",", ":")) + "\n")


def trial_ids(log: Path) -> list[tuple[str, str, str, int, int]]:
    """(run, subject, case, trial, attempt) of every line of a trial log, in order."""
    import json

    out = []
    for raw in log.read_bytes().splitlines():
        r = json.loads(raw)
        out.append((r["run_id"], r["subject"], r["probe_id"], r["trial"], r.get("attempt") or 0))
    return out


__all__ = ["ACCESS_KEY", "S3", "SECRET_KEY", "StallingProxy", "files_of", "no_secret_in",
           "synthetic_trials", "trial_ids"]
