"""What was asked for, kept apart from what happened, so a run can be replayed."""

from dataclasses import dataclass
from typing import Generic, TypeVar

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Intent(Generic[S]):
    """The recipe of a run: the subject and the names of the components applied to it.

    Names, not component objects, so the recipe stays serialisable and can be resolved against
    whatever implementations exist at replay time.

    Nothing in ix builds one yet (the engine records a run's recipe in `spec.yaml`); it is kept
    because DESIGN.md §1 names it as part of `ix.matrix`'s public surface, for programs that
    drive the Matrix directly.
    """

    subject: S
    components: tuple[str, ...]
