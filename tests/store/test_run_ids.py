"""Run ids sort by start time, also within one second: "the latest run" is the last started."""

import re
from datetime import UTC, datetime, timedelta

from ix.store.runs import new_run_id


def test_run_ids_keep_the_documented_shape():
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", new_run_id(datetime.now(UTC)))


def test_runs_started_within_one_second_sort_by_their_start():
    second = datetime(2026, 11, 26, 19, 25, 54, tzinfo=UTC)
    starts = [second + timedelta(milliseconds=ms) for ms in (0, 1, 7, 250, 998, 999)]
    for _ in range(50):  # the random part never reorders them
        ids = [new_run_id(t) for t in starts]
        assert sorted(ids) == ids
    assert new_run_id(second + timedelta(seconds=1)) > new_run_id(starts[-1])
