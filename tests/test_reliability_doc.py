"""docs/reliability.md names the tests that prove each guarantee: every one of them exists."""

import re

from conftest import REPO


def test_every_test_the_reliability_page_names_exists():
    page = (REPO / "docs" / "reliability.md").read_text(encoding="utf-8")
    test_files = {p.stem: p for p in (REPO / "tests").rglob("test_*.py")}
    named = set(re.findall(r"\b(test_\w+)\b", page)) - set(test_files)
    defined: set[str] = set()
    for path in test_files.values():
        defined |= set(re.findall(r"^(?:async )?def (test_\w+)", path.read_text("utf-8"),
                                  re.MULTILINE))
    assert len(named) > 60  # the page does name its tests
    assert sorted(named - defined) == []
    files = set(re.findall(r"`(tests/[\w/]+\.py)", page))
    assert sorted(f for f in files if not (REPO / f).is_file()) == []
