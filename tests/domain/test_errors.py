"""The error tree drawn at the top of `ix.domain.errors` is the real class hierarchy."""

import re

import ix.domain.errors as errors
from ix.api import design
from ix.fs import paths
from ix.lab import loader

CLASSES = {c.__name__: c for c in (
    Exception, errors.IxError, errors.ConfigError, errors.ConfigErrors, errors.StorageError,
    errors.RunBusy, errors.NotFound, errors.TrialError, paths.UnsafePath, loader.MissingSkill,
    design.DesignError)}


def drawn_tree() -> list[tuple[int, str]]:
    """(depth, class name) of every line of the drawing, in order."""
    assert errors.__doc__ is not None
    out = []
    for line in errors.__doc__.splitlines():
        m = re.match(r"^    ((?:│   |    )*)(?:├── |└── )?([A-Z]\w+)\b", line)
        if m and m[2] in CLASSES:
            out.append((len(m[1]) // 4 + (1 if "── " in line else 0), m[2]))
    return out


def test_every_class_drawn_has_the_parent_drawn_above_it():
    tree = drawn_tree()
    assert {name for _, name in tree} == set(CLASSES)
    for i, (depth, name) in enumerate(tree):
        if depth == 0:
            continue
        parent = next(n for d, n in reversed(tree[:i]) if d == depth - 1)
        assert CLASSES[name].__bases__ == (CLASSES[parent],), name


def test_an_error_the_user_can_fix_renders_as_one_line_naming_file_and_field():
    for exc in (errors.ConfigError("bad", file="x.yaml", field="a.b"),
                errors.StorageError("bad", file="x.yaml", field="a.b")):
        assert isinstance(exc, errors.IxError) and exc.render() == "x.yaml: a.b: bad"
    assert not issubclass(errors.StorageError, errors.ConfigError)
    assert not issubclass(errors.TrialError, errors.IxError)  # data about a trial
