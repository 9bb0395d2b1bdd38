"""`Subject.config` is typed (`SubjectConfig`) without narrowing what an adapter may carry: a
key ix does not know is kept as given, and a known key of the wrong type is refused."""

import pytest
from pydantic import ValidationError

from ix.domain.types import Subject


def test_a_plugins_own_keys_are_kept_as_given():
    subject = Subject(name="s", config={"skills": [{"name": "a", "extra": 1}],
                                         "my_plugin": {"depth": 3}})
    assert subject.config["my_plugin"] == {"depth": 3}
    assert subject.config["skills"] == [{"name": "a", "extra": 1}]


def test_a_known_key_of_the_wrong_type_is_refused():
    with pytest.raises(ValidationError, match="concurrency"):
        Subject(name="s", config={"concurrency": "many"})


def test_no_config_is_an_empty_one():
    assert Subject(name="s").config == {}
