"""Core, domain-agnostic types and ports of an experiment (`002_…`): pure, no I/O."""

from ix.domain.ports import AsyncSensor, ExperimentRuntime, Probe, Sensor
from ix.domain.types import Interaction, Reading, Subject

__all__ = [
    "AsyncSensor",
    "ExperimentRuntime",
    "Interaction",
    "Probe",
    "Reading",
    "Sensor",
    "Subject",
]
