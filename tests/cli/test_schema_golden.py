"""`ix schema` is a public contract (DESIGN.md, docs/json.md): its output is pinned byte for
byte to what it printed before the summary's shadow models became the summary's own type
(`ix.eval.schemas`, TypedDicts since bc09969). `golden/` holds `ix schema` and `ix schema
--list --json` as printed at bc09969; a change to a schema must be made there on purpose
(and versioned, docs/json.md)."""

import json
from pathlib import Path

import pytest

from conftest import run_ix
from ix.api.schemas import SCHEMAS, json_schema

GOLDEN = Path(__file__).parent / "golden"


def test_ix_schema_prints_the_golden_bytes():
    r = run_ix("schema")
    assert r.code == 0, r.output
    assert r.stdout == (GOLDEN / "ix_schema.json").read_text(encoding="utf-8")


def test_ix_schema_list_prints_the_golden_bytes():
    r = run_ix("schema", "--list", "--json")
    assert r.code == 0, r.output
    assert r.stdout == (GOLDEN / "ix_schema_list.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_each_schema_is_the_golden_one_key_order_included(name):
    golden = json.loads((GOLDEN / "ix_schema.json").read_text(encoding="utf-8"))
    assert json.dumps(json_schema(name)) == json.dumps(golden["schemas"][name])


def test_one_schema_alone_prints_as_in_the_whole():
    r = run_ix("schema", "summary")
    assert r.code == 0, r.output
    golden = json.loads((GOLDEN / "ix_schema.json").read_text(encoding="utf-8"))
    assert json.loads(r.stdout) == golden["schemas"]["summary"]
