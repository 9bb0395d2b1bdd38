"""The command outputs are the types their producers return (issue 17): `ix.api.schemas` and
`ix.report.schemas` hold TypedDicts, not shadow pydantic models, and what `ix.api` returns
for a real run is exactly such a value — every required key, no key the type lacks, each of
the declared type (pydantic validates strictly against the very type `ix schema` prints)."""

import inspect
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest
from pydantic import BaseModel, TypeAdapter
from typing_extensions import is_typeddict

from conftest import comparison_experiment
from ix import api
from ix.api import annotations, power_plan, reports
from ix.api import schemas as api_schemas
from ix.api.results import query_results
from ix.eval.design import CODES
from ix.report import schemas as report_schemas


def _output_classes() -> list[tuple[str, type]]:
    return [(f"{m.__name__}.{name}", cls) for m in (api_schemas, report_schemas)
            for name, cls in vars(m).items()
            if inspect.isclass(cls) and cls.__module__ == m.__name__
            and name != "SchemaEntry"]


def test_every_command_output_type_is_a_typed_dict_not_a_model():
    classes = _output_classes()
    assert len(classes) > 60
    assert [name for name, cls in classes if issubclass(cls, BaseModel)] == []
    assert [name for name, cls in classes if not is_typeddict(cls)] == []


def _exactly(type_: Any, value: Any) -> None:
    """`value` is a `type_`: strict (no coercion), closed (no unknown key)."""
    TypeAdapter(type_).validate_python(value, strict=True)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    lab = tmp_path_factory.mktemp("types") / "lab"
    comparison_experiment(lab, n_must=4, n_not=3, trials=2, control=0.5,
                          variants={"variant": 0.9})
    ids = [r.run_id for r in (*api.run(lab, ["e"]), *api.run(lab, ["e"]))]
    return lab, ids


def test_report_compare_and_leaderboard_return_their_types(two_runs):
    lab, (first, second) = two_runs
    data = reports.report(lab, second, baseline=first)
    _exactly(report_schemas.ReportOutput, data)
    assert data["run"]["folder"].endswith(second)  # set by build_report, last of `run`
    assert list(data["run"])[-1] == "folder"
    assert data["baseline"] is not None
    _exactly(report_schemas.CompareOutput, api.compare_runs(lab, [first, second]))
    _exactly(report_schemas.LeaderboardOutput, reports.leaderboard(lab))


def test_dry_run_tags_annotations_and_aggregates_return_their_types(two_runs):
    lab, (first, _) = two_runs
    _exactly(list[api_schemas.DryRunPlan], api.dry_run(lab, ["e"]))
    _exactly(api_schemas.Tagged, annotations.tag_run(lab, first, "types-base"))
    _exactly(list[api_schemas.TagEntry], annotations.list_tags(lab))
    _exactly(api_schemas.AnnotationAdded, annotations.annotate(lab, first, "a note"))
    _exactly(api_schemas.AnnotationList, annotations.list_annotations(lab, first))
    _exactly(api_schemas.TagDeleted, annotations.delete_tag(lab, "types-base"))
    rows = query_results(lab, run=first)
    _exactly(api_schemas.AggregateRow, rows.stats())
    _exactly(list[api_schemas.AggregateRow], rows.group_by("subject"))


def test_plan_answers_return_their_types():
    _exactly(api_schemas.WidthAnswer, power_plan.plan_width(0.2))
    _exactly(api_schemas.IndependentAnswer, power_plan.plan_independent(0.2, 0.5))
    _exactly(api_schemas.PairedAnswer, power_plan.plan_paired(
        mde=0.2, cases=20, sigma2_a=0.2, sigma2_b=0.2, omega2=0.05, trials=3))


def test_the_design_warning_codes_ix_schema_prints_are_the_ones_ix_validate_gives():
    codes = get_args(get_type_hints(api_schemas.DesignWarningOut)["code"])
    assert set(codes) == set(CODES)
