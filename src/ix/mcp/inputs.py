"""The shapes of the tools' arguments: pydantic types that become each tool's input schema.

Every object forbids unknown keys, so a misspelt argument is an error naming it rather than
a setting silently ignored.
"""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


ExperimentName = Annotated[str, Field(
    min_length=1, max_length=200, pattern=r"^[^/\\]+$",
    description="An experiment of the lab: its folder name (list_experiments shows them).")]
RunRef = Annotated[str, Field(
    min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
    description="A run: its id (20260301T101500Z-3f9a1c), a unique prefix of it, or a tag.")]
Text = Annotated[str, Field(min_length=1)]


def _not_a_bool(value: Any) -> Any:
    if isinstance(value, bool):  # JSON true is not the number 1
        raise PydanticCustomError("not_a_bool", "a boolean is not a number")
    return value


#: Refuses true and false where a number is wanted (after the constraints, which then keep
#: their JSON-schema spelling).
NOT_A_BOOL = BeforeValidator(_not_a_bool)
Trials = Annotated[int, Field(ge=1), NOT_A_BOOL] | Literal["auto"]
#: A seed fits in a signed 64-bit integer (what every reader of the results can hold).
Seed = Annotated[int, Field(ge=-(2**63), le=2**63 - 1, description=(
    "Base seed (default: the experiment's); same seed, same trial seeds.")), NOT_A_BOOL]
Concurrency = Annotated[int, Field(ge=1, description="Trials in flight."), NOT_A_BOOL]
TRIALS_HELP = ("Trials per case (>= 1), or 'auto' (each case runs until its majority vote is "
               "settled); default: the experiment's.")
Filters = Annotated[list[Text], Field(description=(
    "Only the cases matching every filter: an id glob (must-*), tag:X, difficulty:hard, "
    "expectation:must_trigger; commas inside one filter mean OR, a leading ! negates."))]
Values = Annotated[Text | list[Text] | None, Field(
    description="One value or a list (any of them matches).")]


class Budget(_Input):
    """When to stop scheduling: the run then ends `cancelled`, its trials kept."""

    max_cost: Annotated[float | None, Field(ge=0, allow_inf_nan=False,
                                            description="USD this run may spend.")] = None
    max_trials: Annotated[int | None, Field(ge=1, description=(
        "Trials this run may start (then it ends `cancelled`, and `ix run --resume` "
        "continues it).")), NOT_A_BOOL] = None
    time_limit: Annotated[float | None, Field(gt=0, allow_inf_nan=False,
                                              description="Seconds of wall time.")] = None


class CaseInput(_Input):
    """One case: written to cases/<id>.md (YAML frontmatter, then the prompt)."""

    id: Annotated[str | None, Field(
        min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        description="Unique within the experiment; default must-NNN, not-NNN or edge-NNN.")] \
        = None
    expectation: Annotated[Literal["must_trigger", "should_not_trigger", "acceptable"], Field(
        description="must_trigger: the skill (or sensor) should fire; should_not_trigger: it "
                    "should not; acceptable: either is fine (not run, not scored).")]
    prompt: Annotated[str, Field(min_length=1, description="Sent to the subject verbatim.")]
    rationale: Annotated[str, Field(description="Why this expectation.")] = ""
    tags: list[Text] = Field(default_factory=list)
    difficulty: Literal["easy", "medium", "hard"] | None = None
