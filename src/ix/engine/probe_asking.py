"""How a probe asks a model (`paraphrase`, `generate`, a markdown `agent`): the runtime its
`runtime:` names, one seeded question, and the JSON answer read back."""

import json
from typing import Any

from ix.domain.errors import ConfigError
from ix.domain.types import Subject
from ix.eval.models import EvalCase
from ix.lab.loader import LoadedExperiment
from ix.lab.subjects import load_registry
from ix.runtimes.registry import available

__all__ = ["json_answer", "question", "runtime_spec"]


def runtime_spec(name: str, loaded: LoadedExperiment) -> dict[str, Any]:
    """The runtime a probe's `runtime:` names: a subject profile, or a runtime kind (with
    the experiment's own options when it runs on that kind)."""
    registry = load_registry()
    if name in registry:
        return registry[name].runtime_spec()
    if name in available():
        own = loaded.experiment.runtime
        return dict(own) if own.get("kind") == name else {"kind": name}
    raise ConfigError(f"unknown runtime {name!r}: give a subject profile "
                      f"({', '.join(registry)}) or a runtime kind ({', '.join(available())})",
                      file=loaded.config_file, field="probe.runtime")


def question(name: str, ask_id: str, prompt: str) -> tuple[Subject, EvalCase]:
    """The subject (no skills) and the stimulus that ask `prompt` of a probe's runtime."""
    return (Subject(name=name, description=f"ix's {name} probe", config={"skills": []}),
            EvalCase(id=ask_id, prompt=prompt, expectation="should_not_trigger"))


def json_answer(text: str) -> Any:
    """A model's JSON answer, a code fence around it allowed; `ValueError` if it is none."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").removeprefix("json").strip()
    try:
        return json.loads(stripped)
    except ValueError:
        raise ValueError(f"the answer is not the JSON asked for: {stripped[:80]!r}") from None
