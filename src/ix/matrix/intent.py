"""What was asked for, kept apart from what happened, so a run can be replayed."""

from dataclasses import dataclass
from typing import Generic, TypeVar

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Intent(Generic[S]):
    """The recipe of a run: the subject and the names of the components applied to it.

    Names, not component objects, so the recipe stays serialisable and can be resolved against
    whatever implementations exist at replay time.
    """

    subject: S
    components: tuple[str, ...]
