"""The base of ix's pydantic models.

Their schemas are built on first use, not at import (`defer_build`): a command imports far
more models than it validates (`ix report` reads no experiment.yaml, `ix ls` no trial), and
building them all cost ~0.1 s of every start. A subclass's own `model_config` is merged with
this one.
"""

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """A pydantic model whose validator is built when it first validates."""

    model_config = ConfigDict(defer_build=True)
