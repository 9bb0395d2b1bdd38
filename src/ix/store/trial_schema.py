"""A line of `<experiment>/results/trials.jsonl` as a type (DESIGN.md §3; docs/json.md): the
source of `ix schema trial`, and the strict check `ix import` holds each imported trial to.
The engine writes the line as a plain dict (`ix.engine.pipeline`); this model says what it
must hold. Closed (`additionalProperties: false`) except where the data is free-form by
design: an observation's `meta`, a reading's `metrics`.
"""

from typing import Annotated, Any

from pydantic import ConfigDict, Field

from ix.domain.model import Model
from ix.eval.models import Expectation


class Closed(Model):
    """An object with exactly these keys (`additionalProperties: false`). Built on first use
    (`defer_build`): most commands import these models and never validate with them."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


#: A count ix writes (tokens, a trial seed): from 0, and small enough for a signed 64-bit
#: integer (the query layer's BIGINT); a trial seed is 8 bytes of a hash shifted right by one.
Count = Annotated[int, Field(ge=0, lt=2**63)]
#: A measured amount (milliseconds, dollars): from 0 and finite (JSON has no NaN or infinity).
Amount = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class ToolCallOut(Closed):
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ObservationOut(Closed):
    """What the subject did (`EvalObservation`); the capability fields only where they
    apply (absent, never null)."""

    content: str = ""
    tool_calls: list[ToolCallOut] = Field(default_factory=list)
    duration_ms: Amount = 0
    tokens_input: Count = 0
    tokens_output: Count = 0
    cost_usd: Amount = 0.0
    exit_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None
    status: int | None = None
    headers: dict[str, str] | None = None
    body: str | None = None
    meta: dict[str, Any] | None = Field(None, description="other facts the runtime reports")


class ReadingOut(Closed):
    """What one sensor measured on the trial."""

    sensor_name: str
    passed: bool | None = Field(description="null: the sensor has no verdict on the trial "
                                            "(n/a), left out of its pass rate")
    score: Annotated[float, Field(allow_inf_nan=False)] | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    details: str = ""


class TrialErrorOut(Closed):
    kind: str = Field(description="timeout, runtime_error, rate_limited, cache_miss, ...")
    message: str


class TrialLoadOut(Closed):
    """A request of a `load:` run: when it was due and how late the generator sent it."""

    at_s: Amount = Field(description="scheduled send time, seconds after the subject's load "
                                     "began")
    late_ms: Amount = Field(description="actual send time − scheduled send time")
    warmup: bool = Field(description="sent during warmup_s: recorded, left out of every "
                                     "statistic")


class TrialOutputOut(Closed):
    """A file the subject created or changed in its workspace (DESIGN.md §10), kept under the
    run folder's `artifacts/<subject>/<case>/<trial>/`; or, with `refused`, one it left that
    was not kept."""

    path: str = Field(description="its path in the workspace (POSIX, relative)")
    size: Count | None = Field(None, description="bytes (null when refused unread)")
    sha256: str | None = Field(None, description="of its content (null when not kept)")
    refused: str | None = Field(None, description="why it was not kept: a symbolic link, a "
                                                  "special file, over a size limit")


class TrialNodeOut(Closed):
    """The Ray node that ran the trial (`--executor ray`)."""

    id: str = Field(description="Ray's node id (`ray list nodes`)")
    ip: str
    host: str


class TrialLine(Closed):
    """One line of `<experiment>/results/trials.jsonl`: one attempt of one trial."""

    run_id: str
    experiment: str
    subject: str
    probe_id: str
    trial: Annotated[int, Field(ge=0)]
    seed: Count | None = Field(description="the derived trial seed (null for some imports)")
    attempt: Annotated[int, Field(ge=0)]
    node: TrialNodeOut | None = Field(None, description="--executor ray only: the node "
                                                        "that ran it")
    expectation: Expectation
    started_at: str = Field(description="ISO-8601 UTC, milliseconds, Z")
    duration_ms: Amount
    observation: ObservationOut | None = Field(description="null when the trial errored")
    reading: ReadingOut | None = Field(description="the first sensor's reading; null when "
                                                   "the trial errored")
    error: TrialErrorOut | None
    readings: list[ReadingOut] | None = Field(None, description="every sensor's reading, "
                                                                "when there are several")
    trace: str | None = Field(None, description="the gzipped transcript, relative to the lab")
    load: TrialLoadOut | None = Field(None, description="a request of a `load:` run only")
    outputs: list[TrialOutputOut] | None = Field(None, description="a trial with a workspace: "
                                                 "the files its subject created or changed")
