"""`from ix.stats import …` gives every public function, documented, with its module lazy."""

import inspect
import subprocess
import sys

import ix.stats


def test_every_exported_name_imports_and_is_documented():
    assert len(ix.stats.__all__) >= 30
    for name in ix.stats.__all__:
        obj = getattr(ix.stats, name)
        doc = inspect.getdoc(obj) or ""
        assert len(doc) > 20, f"{name} has no real docstring"


def test_unknown_names_raise_attribute_error():
    try:
        ix.stats.no_such_function  # noqa: B018
    except AttributeError as exc:
        assert "no_such_function" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_importing_the_package_does_not_import_scipy():
    code = "import sys, ix.stats; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
