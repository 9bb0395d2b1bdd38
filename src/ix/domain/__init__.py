"""Core, domain-agnostic types and ports of an experiment (`002_…`): pure, no I/O.

The names below are imported on first use: `ix.domain.errors` is needed by the command line
before anything else, and must not bring pydantic with it.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "AsyncSensor": "ports", "ExperimentRuntime": "ports", "Probe": "ports", "Sensor": "ports",
    "Storage": "ports", "Interaction": "types", "Reading": "types", "Subject": "types",
    "ProbeResult": "verdicts", "Verdict": "verdicts", "aggregate_readings": "verdicts",
}

if TYPE_CHECKING:
    from ix.domain.ports import AsyncSensor, ExperimentRuntime, Probe, Sensor, Storage
    from ix.domain.types import Interaction, Reading, Subject
    from ix.domain.verdicts import ProbeResult, Verdict, aggregate_readings


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f"ix.domain.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'ix.domain' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "AsyncSensor",
    "ExperimentRuntime",
    "Interaction",
    "Probe",
    "ProbeResult",
    "Reading",
    "Sensor",
    "Storage",
    "Subject",
    "Verdict",
    "aggregate_readings",
]
