"""The reason a failed run prints names each failed subject's own error message."""

from ix.engine.outcome import ErrorLog, failed_subjects, failure_reason


def test_a_failed_subject_is_explained_by_its_own_message_not_another_subjects():
    log = ErrorLog()
    log.add("a-only", "no_skills", "lexical: subject 'a-only' has no skills")
    log.add("a-plus-b", "no_skills", "lexical: subject 'a-plus-b' has no skills")
    failed = failed_subjects({"a-only": (1, 1), "a-plus-b": (1, 1)}, log, {})
    assert {f["subject"]: f["example"] for f in failed} == {
        "a-only": "lexical: subject 'a-only' has no skills",
        "a-plus-b": "lexical: subject 'a-plus-b' has no skills"}
    reason = failure_reason(failed)
    assert "'a-plus-b' has no skills" in reason and "'a-only' has no skills" in reason


def test_the_reason_is_one_line_whatever_the_example_holds():
    log = ErrorLog()
    log.add("s", "missing_api_key", "claude-code: set ANTHROPIC_API_KEY in the environment\n"
                                    "(each trial runs with an empty HOME)")
    reason = failure_reason(failed_subjects({"s": (2, 2)}, log, {}))
    assert "\n" not in reason
    assert 'e.g. "claude-code: set ANTHROPIC_API_KEY in the environment (each trial' in reason


def test_a_subject_with_some_good_trials_has_not_failed():
    log = ErrorLog()
    log.add("s", "timeout", "timed out after 1 s")
    assert failed_subjects({"s": (3, 1)}, log, {}) == []
