"""`ix ci comment`: one comment per pull request (GitHub) or merge request (GitLab), posted
then updated in place, against a loopback fake of each platform's REST API that records every
request (the `api` fixture of tests/ci/conftest.py). The token travels in one header and
appears in no output."""

import json
from pathlib import Path

from conftest import ix_in_process, run_ix
from ix.api.integrations.comment import MARKER, comment_body

TOKEN = "ghs_fakeTOKENfor1test2only3"  # a made-up token: it must never be printed


def github_env(tmp: Path, url: str) -> dict[str, str]:
    event = tmp / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": 7,
                                 "pull_request": {"number": 7}}))
    return {"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": url, "GITHUB_REPOSITORY": "o/r",
            "GITHUB_EVENT_PATH": str(event), "GITLAB_CI": ""}


def _reports(tmp: Path, *texts: str) -> list[str]:
    paths = []
    for i, text in enumerate(texts):
        path = tmp / f"r{i}.md"
        path.write_text(text)
        paths.append(str(path))
    return paths


def test_the_first_run_posts_the_second_updates_the_same_comment(api, tmp_path):
    fake, url = api
    env = github_env(tmp_path, url)
    first = run_ix("ci", "comment", *_reports(tmp_path, "## exp-a\n\nSUPPORTED\n",
                                              "## exp-b\n\nREFUTED\n"), env=env)
    assert first.code == 0, first.output
    assert "created the ix comment on pull request o/r#7" in first.stdout
    second = ix_in_process("ci", "comment", *_reports(tmp_path, "## exp-a\n\nINCONCLUSIVE\n"),
                           "--json", env=env)
    assert second.code == 0, second.output
    assert json.loads(second.stdout)["action"] == "updated"
    ours = [c for c in fake.comments if MARKER in c["body"]]
    assert len(ours) == 1 and len(fake.comments) == 2  # the person's comment is untouched
    assert ours[0]["body"].startswith(MARKER + "\n## exp-a")
    assert "INCONCLUSIVE" in ours[0]["body"] and "REFUTED" not in ours[0]["body"]
    assert fake.comments[0]["body"] == "LGTM, a person's comment"
    assert [(r["method"], r["path"].split("?")[0]) for r in fake.requests] == [
        ("GET", "/repos/o/r/issues/7/comments"), ("POST", "/repos/o/r/issues/7/comments"),
        ("GET", "/repos/o/r/issues/7/comments"), ("PATCH", "/repos/o/r/issues/comments/101")]
    assert all(r["headers"]["authorization"] == f"Bearer {TOKEN}" for r in fake.requests)
    for r in (first, second):
        assert TOKEN not in r.stdout + r.stderr
    assert not any(TOKEN in p.read_text(errors="replace") for p in tmp_path.rglob("*")
                   if p.is_file())


def test_a_gitlab_merge_request_gets_one_note(api, tmp_path):
    fake, url = api
    env = {"GITLAB_CI": "true", "CI_API_V4_URL": f"{url}/", "CI_PROJECT_ID": "42",
           "CI_MERGE_REQUEST_IID": "3", "IX_GITLAB_TOKEN": TOKEN}
    for _ in range(2):
        r = ix_in_process("ci", "comment", *_reports(tmp_path, "## exp\n"), env=env)
        assert r.code == 0, r.output
        assert TOKEN not in r.output
    assert [r["method"] for r in fake.requests] == ["GET", "POST", "GET", "PUT"]
    assert all(r["headers"]["private-token"] == TOKEN for r in fake.requests)
    assert sum(MARKER in c["body"] for c in fake.comments) == 1


def test_a_refusal_or_a_missing_variable_is_exit_2_without_the_token(api, tmp_path):
    _, url = api
    env = github_env(tmp_path, url)
    env["GITHUB_REPOSITORY"] = "o/elsewhere"  # the fake answers 404
    r = ix_in_process("ci", "comment", *_reports(tmp_path, "x"), env=env)
    assert r.code == 2 and "404" in r.output and TOKEN not in r.output
    env["GITHUB_TOKEN"] = ""
    r = ix_in_process("ci", "comment", *_reports(tmp_path, "x"), env=env)
    assert r.code == 2 and "GITHUB_TOKEN is not set" in r.output


def test_the_comment_keeps_within_githubs_limit_by_whole_reports():
    body = comment_body(["## a\n" + "x" * 40_000, "## b\n" + "y" * 40_000], limit=65_536)
    assert len(body) <= 65_536 and body.startswith(MARKER + "\n## a")
    assert "y" * 100 not in body and "1 more experiment report(s) left out" in body
