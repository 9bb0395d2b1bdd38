"""Adapters that run a stimulus against a subject, chosen by `runtime:` (DESIGN.md §2)."""

from ix.runtimes.registry import (
    RuntimeContext,
    RuntimeKind,
    available,
    build_runtime,
    default_concurrency,
    get_kind,
    validate_options,
)

__all__ = [
    "RuntimeContext",
    "RuntimeKind",
    "available",
    "build_runtime",
    "default_concurrency",
    "get_kind",
    "validate_options",
]
