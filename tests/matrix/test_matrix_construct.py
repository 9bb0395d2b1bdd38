import copy
import os
import pickle
from datetime import UTC, datetime

import pytest

from ix.matrix import Artifact, Construct, Intent


def test_artifact_defaults_to_a_unique_id_and_a_utc_timestamp() -> None:
    ids = {Artifact("k", "p", 1).id for _ in range(1_000)}
    assert len(ids) == 1_000 and all(isinstance(i, str) and i for i in ids)
    assert Artifact("k", "p", 1).created_at.tzinfo is UTC


def test_artifact_is_immutable() -> None:
    artifact = Artifact("k", "p", 1)
    with pytest.raises(AttributeError):
        artifact.data = 2  # type: ignore[misc]


def test_append_returns_a_new_construct_and_leaves_the_old_one_unchanged() -> None:
    old = Construct("subject")
    artifact = Artifact("numbers", "numbers", [1, 2])
    new = old.append(artifact)
    assert new is not old
    assert old.artifacts == () and not old.has("numbers")
    assert new.artifacts == (artifact,) and new.get("numbers") is artifact
    assert new.subject == old.subject


def test_branches_appended_from_one_construct_do_not_see_each_other() -> None:
    base = Construct("s").append(Artifact("a", "x", 1))
    left = base.append(Artifact("b", "left", 2))
    right = base.append(Artifact("c", "right", 3))
    assert left.kinds == {"a", "b"} and right.kinds == {"a", "c"}
    assert base.kinds == {"a"}


def test_get_returns_the_latest_artifact_of_a_kind() -> None:
    construct = Construct("s").append(Artifact("score", "a", 1)).append(Artifact("score", "b", 2))
    assert construct.get("score").producer == "b"
    assert construct.data("score") == 2
    assert [a.data for a in construct.artifacts] == [1, 2]  # the ledger keeps both


def test_get_of_an_absent_kind_raises_key_error_naming_it_and_what_exists() -> None:
    construct = Construct("s").append(Artifact("numbers", "p", 1))
    with pytest.raises(KeyError, match=r"'squares'.*numbers"):
        construct.get("squares")
    assert not construct.has("squares")


def test_construct_can_be_seeded_with_artifacts_up_front() -> None:
    stimulus = Artifact("stimulus", "probe", "hello")
    assert Construct("s", (stimulus,)).get("stimulus") is stimulus
    seeded = Construct.seeded("s", {"stimulus": "hello", "n": 3})
    assert seeded.data("stimulus") == "hello" and seeded.data("n") == 3
    assert {a.producer for a in seeded.artifacts} == {"given"}


def test_intent_is_a_frozen_recipe_of_subject_and_component_names() -> None:
    intent = Intent("subject", ("numbers", "squares"))
    assert intent == Intent("subject", ("numbers", "squares"))
    with pytest.raises(AttributeError):
        intent.subject = "other"  # type: ignore[misc]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_process_does_not_repeat_the_parents_artifact_ids() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report its next id and leave without running pytest's teardown
        os.write(write, Artifact("k", "p", 1).id.encode())
        os._exit(0)
    os.close(write)
    parent_id = Artifact("k", "p", 1).id
    os.waitpid(pid, 0)
    child_id = os.read(read, 100).decode()
    os.close(read)
    assert child_id and child_id != parent_id


def test_an_artifacts_stamps_are_taken_when_it_is_made_and_kept() -> None:
    before = datetime.now(UTC)
    artifact = Artifact("k", "p", [1])
    after = datetime.now(UTC)
    first_id, first_at = artifact.id, artifact.created_at
    assert before <= first_at <= after
    assert (artifact.id, artifact.created_at) == (first_id, first_at)  # read twice: the same
    given = Artifact("k", "p", 1, "my-id", before)
    assert (given.id, given.created_at) == ("my-id", before)


def test_an_artifact_compares_hashes_copies_and_pickles_by_its_five_fields() -> None:
    artifact = Artifact("k", "p", (1, "x"))
    same = Artifact("k", "p", (1, "x"), artifact.id, artifact.created_at)
    assert artifact == same and hash(artifact) == hash(same)
    assert artifact != Artifact("k", "p", (1, "x"))  # another id
    for twin in (copy.copy(artifact), copy.deepcopy(artifact),
                 pickle.loads(pickle.dumps(artifact))):
        assert twin == artifact
    assert repr(artifact) == (f"Artifact(kind='k', producer='p', data=(1, 'x'), "
                              f"id={artifact.id!r}, created_at={artifact.created_at!r})")
    with pytest.raises(AttributeError):
        del artifact.kind
