"""`ix ci comment`: post the reports' Markdown (`ix report --format github`) as ONE comment on
the pull request (GitHub) or merge request (GitLab) the CI job runs for, and on the next run
update that same comment instead of adding another (docs/scheduling.md).

The comment is found by a hidden marker (`MARKER`) on its first line. Where to post comes from
the variables the platform sets in a job: GitHub Actions' `GITHUB_API_URL`,
`GITHUB_REPOSITORY` and the event file `GITHUB_EVENT_PATH` (the pull request's number), with
the token in `GITHUB_TOKEN`; GitLab CI's `CI_API_V4_URL`, `CI_PROJECT_ID` and
`CI_MERGE_REQUEST_IID`, with a token that may write notes in `IX_GITLAB_TOKEN` (or
`GITLAB_TOKEN`). The token goes into one request header and nowhere else: no message, no
file, no output of ix holds it.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx

from ix.domain.errors import ConfigError
from ix.report.github import COMMENT_LIMIT, combine

#: The hidden first line that marks the comment ix keeps up to date.
MARKER = "<!-- ix-report -->"
Platform = Literal["github", "gitlab"]
GITLAB_TOKENS = ("IX_GITLAB_TOKEN", "GITLAB_TOKEN")
_TIMEOUT = httpx.Timeout(30.0)


@dataclass(frozen=True)
class Target:
    """Where the comment goes: the API's URL for the review's comments, the header that
    carries the token, and how the platform names a comment's id and text."""

    platform: Platform
    comments: str  # GET (list) and POST (new)
    edit: str  # a comment's URL: {comments}/{id} on GitLab, issues/comments/{id} on GitHub
    headers: dict[str, str]
    where: str  # for messages: "pull request owner/repo#12"

    def __repr__(self) -> str:  # never the headers: they hold the token
        return f"Target({self.platform}, {self.where})"


def platform_of(env: Mapping[str, str]) -> Platform:
    """The platform the job runs on (`GITLAB_CI` or `GITHUB_ACTIONS`), GitHub by default."""
    return "gitlab" if env.get("GITLAB_CI") == "true" else "github"


def target(env: Mapping[str, str], platform: Platform | None = None,
           number: int | None = None) -> Target:
    """Where to post, from the job's environment (`number`: the pull or merge request,
    instead of the one the job runs for); a ConfigError naming the variable that is
    missing."""
    platform = platform or platform_of(env)
    return _gitlab(env, number) if platform == "gitlab" else _github(env, number)


def _need(env: Mapping[str, str], name: str, why: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(f"{name} is not set: {why}", field=name)
    return value


def _github(env: Mapping[str, str], number: int | None) -> Target:
    token = _need(env, "GITHUB_TOKEN", "pass the job's token to the step "
                  "(env: GITHUB_TOKEN: ${{ github.token }})")
    api = env.get("GITHUB_API_URL", "").strip().rstrip("/") or "https://api.github.com"
    repo = _need(env, "GITHUB_REPOSITORY", "run in GitHub Actions, or set it to owner/name")
    if number is None:
        number = _event_number(_need(env, "GITHUB_EVENT_PATH", "run in GitHub Actions on a "
                                     "pull request, or give --pr NUMBER"))
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
               "X-GitHub-Api-Version": "2022-11-28"}
    base = f"{api}/repos/{repo}/issues"
    return Target("github", f"{base}/{number}/comments", f"{base}/comments/{{id}}", headers,
                  f"pull request {repo}#{number}")


def _event_number(path: str) -> int:
    """The pull request's number in GitHub's event file."""
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the event file: {exc}", file=Path(path),
                          field="GITHUB_EVENT_PATH") from None
    pull = event.get("pull_request") if isinstance(event, dict) else None
    number = (pull or {}).get("number") if isinstance(pull, dict) else None
    if not isinstance(number, int):
        raise ConfigError("the event is not a pull request's (run on pull_request, or give "
                          "--pr NUMBER)", file=Path(path), field="GITHUB_EVENT_PATH")
    return number


def _gitlab(env: Mapping[str, str], number: int | None) -> Target:
    token = next((env[n].strip() for n in GITLAB_TOKENS if env.get(n, "").strip()), "")
    if not token:
        raise ConfigError("no token to write the note: set IX_GITLAB_TOKEN (a masked CI/CD "
                          "variable holding a project access token with the api scope)",
                          field="IX_GITLAB_TOKEN")
    api = _need(env, "CI_API_V4_URL", "run in GitLab CI").rstrip("/")
    project = _need(env, "CI_PROJECT_ID", "run in GitLab CI")
    if number is None:
        iid = _need(env, "CI_MERGE_REQUEST_IID", "run in a merge request pipeline, or give "
                    "--pr NUMBER")
        if not iid.isdigit():
            raise ConfigError(f"not a number: {iid!r}", field="CI_MERGE_REQUEST_IID")
        number = int(iid)
    base = f"{api}/projects/{project}/merge_requests/{number}/notes"
    return Target("gitlab", base, f"{base}/{{id}}", {"PRIVATE-TOKEN": token},
                  f"merge request !{number} of project {project}")


def comment_body(texts: Sequence[str], limit: int = COMMENT_LIMIT) -> str:
    """The comment: the marker, then the reports' Markdown, within `limit` characters."""
    return combine(texts, limit - len(MARKER) - 1, prefix=MARKER)


def post(body: str, where: Target, client: httpx.Client | None = None) -> dict[str, Any]:
    """Post `body` as the review's ix comment: update the comment holding `MARKER` (the first
    one found) or create it. Returns {"action": "created"|"updated", "id", "url", "where"}."""
    own = client is None
    http = client or httpx.Client(timeout=_TIMEOUT, follow_redirects=False)
    try:
        found = _find(http, where)
        if found is None:
            answer = _call(http, "POST", where.comments, where, {"body": body})
            action = "created"
        else:
            method = "PATCH" if where.platform == "github" else "PUT"
            answer = _call(http, method, where.edit.format(id=found), where, {"body": body})
            action = "updated"
    finally:
        if own:
            http.close()
    return {"action": action, "id": answer.get("id"),
            "url": answer.get("html_url") or answer.get("web_url"), "where": where.where}


def _find(http: httpx.Client, where: Target) -> Any:
    """The id of the first comment of the review that holds the marker, else None."""
    for page in range(1, 51):  # 5,000 comments: enough for any review
        batch = _call(http, "GET", where.comments, where,
                      params={"per_page": "100", "page": str(page)})
        if not isinstance(batch, list):
            raise ConfigError(f"the API's answer for the comments of {where.where} is not "
                              "a list", field="--pr")
        for item in batch:
            if isinstance(item, dict) and MARKER in str(item.get("body") or ""):
                return item.get("id")
        if len(batch) < 100:
            return None
    return None


def _call(http: httpx.Client, method: str, url: str, where: Target,
          body: Mapping[str, Any] | None = None,
          params: Mapping[str, str] | None = None) -> Any:
    try:
        answer = http.request(method, url, headers=where.headers, json=body, params=params)
    except httpx.HTTPError as exc:
        raise ConfigError(f"could not reach the {where.platform} API for {where.where}: "
                          f"{type(exc).__name__}", field="--pr") from None
    if answer.status_code >= 400:
        hint = {401: "the token was refused", 403: "the token may not write comments (on "
                "GitHub: permissions: pull-requests: write; a fork's pull request gets a "
                "read-only token)", 404: "no such review, or the token cannot see it"}
        raise ConfigError(f"the {where.platform} API answered {answer.status_code} to "
                          f"{method} for {where.where}: "
                          + hint.get(answer.status_code, answer.reason_phrase), field="--pr")
    try:
        return answer.json()
    except ValueError:
        raise ConfigError(f"the {where.platform} API's answer is not JSON", field="--pr"
                          ) from None
