"""A kind-agnostic async DAG runner: components read and write typed artifacts on a construct.

Knows nothing of the rest of ix (an import-linter contract holds it to that) and needs only the
standard library, so any experiment kind can be expressed as a graph of components.
"""

from ix.matrix.artifact import Artifact
from ix.matrix.component import Component
from ix.matrix.construct import Construct
from ix.matrix.dag import Dag, DagCompiler
from ix.matrix.errors import (
    ComponentError,
    CycleError,
    DagError,
    DuplicateComponentError,
    DuplicateProviderError,
    MissingProviderError,
)
from ix.matrix.intent import Intent
from ix.matrix.orchestrator import Orchestrator, Outcome
from ix.matrix.runtime import AgentRuntime
from ix.matrix.scheduler import DagScheduler
from ix.matrix.sink import ArtifactSink, JsonDirectorySink

__all__ = [
    "AgentRuntime",
    "Artifact",
    "ArtifactSink",
    "Component",
    "ComponentError",
    "Construct",
    "CycleError",
    "Dag",
    "DagCompiler",
    "DagError",
    "DagScheduler",
    "DuplicateComponentError",
    "DuplicateProviderError",
    "Intent",
    "JsonDirectorySink",
    "MissingProviderError",
    "Orchestrator",
    "Outcome",
]
