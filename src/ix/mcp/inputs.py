"""The shapes of the tools' arguments: pydantic types that become each tool's input schema.

Every object forbids unknown keys, so a misspelt argument is an error naming it rather than
a setting silently ignored.
"""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


ExperimentName = Annotated[str, Field(
    min_length=1, max_length=200, pattern=r"^[^/\\]+$",
    description="An experiment of the lab: its folder name (list_experiments shows them).")]
RunRef = Annotated[str, Field(
    min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
    description="A run: its id (20260301T101500Z-3f9a1c), a unique prefix of it, or a tag.")]
Text = Annotated[str, Field(min_length=1)]
Trials = Annotated[int, Field(ge=1)] | Literal["auto"]
TRIALS_HELP = ("Trials per case (>= 1), or 'auto' (each case runs until its majority vote is "
               "settled); default: the experiment's.")
Filters = Annotated[list[Text], Field(description=(
    "Only the cases matching every filter: an id glob (must-*), tag:X, difficulty:hard, "
    "expectation:must_trigger; commas inside one filter mean OR, a leading ! negates."))]
Values = Annotated[Text | list[Text] | None, Field(
    description="One value or a list (any of them matches).")]


class Budget(_Input):
    """When to stop scheduling: the run then ends `cancelled`, its trials kept."""

    max_cost: Annotated[float | None, Field(ge=0, description="USD this run may spend.")] = None
    max_trials: Annotated[int | None, Field(ge=1, description="Trials this run may start.")] = None
    time_limit: Annotated[float | None, Field(gt=0, description="Seconds of wall time.")] = None


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
