"""The platforms' own schemas (vendored by check-jsonschema, read offline) and a YAML 1.2
reader (GitHub's `on:` is a key, not YAML 1.1's `true`)."""

import io
import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

SCHEMAS = {"github": "github-workflows.json", "gitlab": "gitlab-ci.json"}


@cache
def schema(platform: str) -> dict[str, Any]:
    vendor = resources.files("check_jsonschema.builtin_schemas.vendor")
    return json.loads((vendor / SCHEMAS[platform]).read_text(encoding="utf-8"))


def load(text: str) -> Any:
    """The workflow as the platform reads it (YAML 1.2), as plain dicts and lists."""
    return json.loads(json.dumps(YAML(typ="safe", pure=True).load(io.StringIO(text))))


def schema_errors(platform: str, document: Any) -> list[str]:
    validator = jsonschema.Draft7Validator(schema(platform))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(document)]


@pytest.fixture
def schema_check():
    """`schema_check(platform, text)`: the workflow parsed, and every schema error in it."""
    def check(platform: str, text: str) -> tuple[Any, list[str]]:
        document = load(text)
        return document, schema_errors(platform, document)
    return check
