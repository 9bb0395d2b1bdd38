"""`ix compare`'s configuration diff (`ix.report.diff`) says when the trial seed rule changed:
a run made before spec.yaml recorded `seeding` drew its seeds per subject."""

from ix.report.diff import spec_changes

OLD = {"seed": 0, "trials": 5}                       # made before `seeding` was recorded
NEW = {"seed": 0, "seeding": "common", "trials": 5}


def test_a_run_made_before_common_seeds_differs_from_a_new_one_in_its_seeding():
    assert spec_changes(OLD, NEW) == [{"path": "seeding", "change": "changed",
                                       "before": "per-subject", "after": "common"}]
    assert spec_changes(OLD, {**NEW, "seeding": "per-subject"}) == []
    assert spec_changes(NEW, NEW) == []


def test_an_imported_run_has_no_seed_and_no_seeding():
    imported = {"seed": None, "trials": 5}
    assert [c["path"] for c in spec_changes(imported, NEW)] == ["seed", "seeding"]
    assert spec_changes(imported, imported) == []
