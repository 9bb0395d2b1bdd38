"""`ix view` in a real browser: the real command on a lab made by the real `ix run`, driven by
Playwright through Debian's Chromium (/usr/bin/chromium; never downloaded).

The lab: `traced` runs on the `claude-code` runtime with a stand-in `claude` (a script that
prints the transcripts of tests/fixtures/claude-stream, or a hostile one), so its trials keep
traces; `activation` runs on the mock runtime. Screenshots of every page go to
`<tmp_path>/screenshots/`. The browser fixtures are in this folder's conftest.py.
"""

import gzip
import http.client
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import httpx
import pytest

from conftest import REPO, flat, mock_experiment, run_ix, write

#: Chromium and a real report or server: left out by `scripts/test --fast`. (The runs
#: stay real `ix` subprocesses: the browser holds an event loop, so `ix run` cannot run
#: in this process while it is open.)
pytestmark = pytest.mark.slow

FIXTURES = REPO / "tests" / "fixtures" / "claude-stream"
#: What a hostile model (or case author) writes; it must show as text and never run.
SCRIPT = "<script>window.__pwned = 'script'</script>"
PAYLOAD = SCRIPT + "<img src=x onerror=\"window.__pwned = 'img'\">"
SECRET = "IX-SECRET-OUTSIDE-THE-LAB"
WEIRD_ID = "w<img src=x onerror=window.__pwned=1>"
#: The outcome subject: a page of hostile HTML and a binary file, made in its workspace.
MAKER = """
open("notes.html", "w").write({payload!r} + " the notes")
open("data.bin", "wb").write(bytes(range(256)))
"""
#: Every request of the browser goes to the viewer on 127.0.0.1 (or is inline data).
VIEW_PREFIXES = ("http://127.0.0.1:", "data:")

FAKE_CLAUDE = """
import json, sys
from pathlib import Path

FIXTURES = Path({fixtures!r})
PAYLOAD = {payload!r}
prompt = sys.stdin.read()


def emit(obj):
    print(json.dumps(obj), flush=True)


def replay(name, swap=None):
    for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
        if swap:
            line = line.replace(swap, json.dumps(PAYLOAD)[1:-1] + " " + swap)
        print(line, flush=True)


init = {{"type": "system", "subtype": "init", "model": "claude-sonnet-4-5", "tools": ["Bash"],
        "skills": [], "session_id": "s"}}
if "[skill]" in prompt:
    replay("skill_invoked_allowed.jsonl")
elif "[bash]" in prompt:
    replay("multi_turn_bash_read.jsonl")
elif "[error]" in prompt:
    replay("error_api_400_prompt_too_long.jsonl", swap="Prompt is too long")
    sys.exit(1)
elif "[xss]" in prompt:
    emit(init)
    emit({{"type": "assistant", "parent_tool_use_id": None, "message": {{
        "role": "assistant", "model": "claude-sonnet-4-5",
        "usage": {{"input_tokens": 100, "output_tokens": 7}},
        "content": [{{"type": "tool_use", "id": "toolu_x1", "name": "Bash",
                     "input": {{"command": "echo " + PAYLOAD}}}}]}}}})
    emit({{"type": "user", "parent_tool_use_id": None, "timestamp": "2026-11-25T21:32:18.918Z",
          "message": {{"role": "user", "content": [{{"type": "tool_result",
                       "tool_use_id": "toolu_x1", "content": PAYLOAD, "is_error": False}}]}}}})
    emit({{"type": "assistant", "parent_tool_use_id": None, "message": {{
        "role": "assistant", "model": "claude-sonnet-4-5",
        "usage": {{"input_tokens": 120, "output_tokens": 30}},
        "content": [{{"type": "text", "text": "Here you go: " + PAYLOAD}}]}}}})
    emit({{"type": "result", "subtype": "success", "is_error": False, "num_turns": 2,
          "duration_ms": 1234, "duration_api_ms": 1000, "total_cost_usd": 0.0042,
          "result": "Here you go: " + PAYLOAD,
          "usage": {{"input_tokens": 220, "output_tokens": 37}}}})
else:
    replay("no_skill_text_only.jsonl")
"""


# --------------------------------------------------------------------------- the lab

def fake_claude(root: Path) -> Path:
    path = root / "fake-claude"
    path.write_text(f"#!{sys.executable}\n" + FAKE_CLAUDE.format(fixtures=str(FIXTURES),
                                                                 payload=PAYLOAD),
                    encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def case_file(exp: Path, name: str, expectation: str, prompt: str, extra: str = "") -> None:
    write(exp / "cases" / f"{name}.md", f"---\n{extra}expectation: {expectation}\n---\n{prompt}\n")


def make_lab(root: Path) -> tuple[Path, dict[str, Any]]:
    """The lab, run for real; returns it and what the tests look up (run ids, paths)."""
    lab = root / "lab"
    exp = lab / "traced"
    for skill in ("csv-summary", "target"):  # skills a sensor names must exist (issue 16 §2)
        write(lab / "skills" / skill / "SKILL.md",
              f"---\nname: {skill}\ndescription: Use for {skill}.\n---\nBody\n")
    write(exp / "experiment.yaml", f"""
        name: traced
        description: "{PAYLOAD.replace('"', "'")}"
        runtime:
          kind: claude-code
          cli_path: {fake_claude(root)}
        sensor:
          kind: activation
          skill: csv-summary
        trials: 2
        subjects:
          - name: control
          - name: variant
    """)
    case_file(exp, "must-001", "must_trigger", "Summarize data.csv for me. [skill]")
    case_file(exp, "must-002", "must_trigger", "List the files, then read data.csv. [bash]")
    case_file(exp, "not-001", "should_not_trigger", "What is 2+2?")
    case_file(exp, "xss-001", "should_not_trigger", f"{PAYLOAD} Echo this back. [xss]")
    case_file(exp, "err-001", "must_trigger", "A request the API refuses. [error]")
    case_file(exp, "weird", "should_not_trigger", "A case with a hostile id. [xss]",
              extra=f"id: '{WEIRD_ID}'\n")
    mock_experiment(lab, "activation", rates={"must-001": 1.0, "must-002": 0.5}, trials=4)
    made = lab / "made"  # an outcome experiment: what its subject makes in its workspace
    write(made / "maker.py", MAKER.format(payload=PAYLOAD))
    write(made / "experiment.yaml", f"""
        name: made
        trials: 1
        workspace: {{}}
        runtime: {{kind: command, argv: [{json.dumps(sys.executable)},
                   {json.dumps(str(made / "maker.py"))}]}}
        sensor: {{kind: file_exists, path: notes.html}}
    """)
    case_file(made, "make-001", "must_trigger", "Make the files.")
    env = {"ANTHROPIC_API_KEY": "sk-ant-fake-key-for-tests"}
    for _ in range(2):
        r = run_ix("run", "--lab", str(lab), "traced", env=env, timeout=180)
        assert r.code == 0, r.output
    for name in ("activation", "made"):
        r = run_ix("run", "--lab", str(lab), name, env=env)
        assert r.code == 0, r.output
    run_ids = sorted(p.name for p in (exp / "results" / "runs").iterdir())
    assert len(run_ids) == 2
    first, second = run_ids

    # things outside the lab, and ways that try to reach them
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    stolen = outside / "run"
    shutil.copytree(exp / "results" / "runs" / first, stolen)
    symlinked = "20991231T000000Z-0e0e0e"
    (exp / "results" / "runs" / symlinked).symlink_to(stolen, target_is_directory=True)
    write(lab / "tags.yaml", f"""
        escape:
          run: {symlinked}
          experiment: traced
          folder: ../outside/run
          tagged_at: '2026-11-26T02:30:00.000Z'
          tagged_by: mallory
    """)
    traces = exp / "results" / "runs" / first / "traces"
    (traces / "evil-link.jsonl.gz").symlink_to(outside / "secret.txt")
    log = exp / "results" / "trials.jsonl"
    line = next(json.loads(raw) for raw in log.read_text(encoding="utf-8").splitlines()
                if f'"run_id":"{first}"' in raw and '"probe_id":"must-001"' in raw
                and '"subject":"control"' in raw)  # as ix writes lines: compact
    with log.open("a", encoding="utf-8") as f:
        for trial, trace in ((90, "../../../../outside/secret.txt"),
                             (91, f"runs/{first}/traces/evil-link.jsonl.gz"),
                             (92, str(outside / "secret.txt"))):
            f.write(json.dumps({**line, "trial": trial, "trace": trace}) + "\n")
    (made_run,) = (p.name for p in (made / "results" / "runs").iterdir())
    return lab, {"first": first, "second": second, "outside": outside, "stolen": stolen,
                 "symlinked": symlinked, "made": made_run}


@dataclass
class Viewer:
    url: str
    lab: Path
    facts: dict[str, Any]
    proc: subprocess.Popen[str]
    stderr: list[str] = field(default_factory=list)


def start_view(lab: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    """The real `ix view --port 0` in a subprocess; returns it and its first stdout line (the
    URL it listens on; printed once the socket is bound)."""
    exe = Path(sys.executable).parent / "ix"
    argv = [str(exe)] if exe.exists() else [sys.executable, "-m", "ix"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    env.update({"NO_COLOR": "1", "XDG_CONFIG_HOME": str(lab.parent / ".no-user-config")})
    proc = subprocess.Popen([*argv, "view", "--lab", str(lab), "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"ix view did not start: {proc.communicate()}")
    return proc, line


def stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            return proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.communicate()


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    root = tmp_path_factory.mktemp("view")
    lab, facts = make_lab(root)
    proc, line = start_view(lab)
    url = line.split(" at ", 1)[1].split()[0]
    assert url.startswith("http://127.0.0.1:"), line
    yield Viewer(url, lab, facts, proc)
    _, err = stop(proc)
    assert "Traceback" not in err, err
    assert proc.returncode == 0  # Ctrl-C stops the server: a normal end


# --------------------------------------------------------------------------- the browser

@pytest.fixture
def browse(watched_page: Any, viewer: Viewer) -> Any:
    """A watched page (conftest.py) that may load only the viewer's own URLs."""
    return watched_page(allow=(viewer.url, "data:"))


def shot(w: Any, name: str) -> None:
    w.screenshot(f"{len(list(w.shots.glob('*.png'))) + 1:02d}-{name}"
                 if w.shots.is_dir() else f"01-{name}")


def no_script_ran(w: Any) -> None:
    """Nothing hostile ran: no dialog, no side effect, no script or handler in the DOM, no
    request anywhere but the viewer."""
    assert w.dialogs == []
    assert w.page.evaluate("() => window.__pwned") is None
    assert w.page.locator("script").count() == 0
    assert w.page.locator("img[onerror]").count() == 0
    assert w.blocked == []
    assert all(u.startswith(VIEW_PREFIXES) for u in w.requests), w.requests


# --------------------------------------------------------------------------- tests

def test_click_from_the_experiments_to_a_trace(browse: Any, viewer: Viewer):
    page = browse.page
    page.goto(viewer.url)
    assert page.locator("main > h1").inner_text() == "Experiments"
    assert page.locator("section.experiment h2").all_inner_texts() == ["activation", "made",
                                                                        "traced"]
    shot(browse, "experiments")

    second = viewer.facts["second"]
    page.locator("a.run-link", has_text=second).click()
    page.wait_for_load_state()
    assert second in page.locator("main > h1").inner_text()
    assert page.locator("#report").count() == 1
    assert page.locator(".report-body .ix-report svg").count() >= 4  # the report's charts
    cases = page.locator("a.case-link").all_inner_texts()
    assert {"must-001", "must-002", "not-001", "xss-001", "err-001", WEIRD_ID} <= set(cases)
    shot(browse, "run")

    page.locator("a.case-link", has_text="must-001").click()
    page.wait_for_load_state()
    assert "must-001" in page.locator("main > h1").inner_text()
    assert "Summarize data.csv for me. [skill]" in page.locator("details.prompt pre").inner_text()
    assert page.locator("table.stats tbody tr").count() == 2      # control, variant
    assert page.locator("table.trials tbody tr").count() == 4     # 2 subjects x 2 trials
    shot(browse, "case")

    page.locator("a.trial-link").first.click()
    page.wait_for_load_state()
    assert "Trial" in page.locator("main > h1").inner_text()
    assert page.locator(".badge.good", has_text="right").count() == 1
    assert page.locator("dd.reading").inner_text() == "invoked"
    calls = page.locator("ol.tool-calls li").all_inner_texts()
    assert calls and calls[0].startswith("Skill") and '"skill": "csv-summary"' in calls[0]
    assert "The CSV has 2 data rows" in page.locator("pre.answer").inner_text()
    shot(browse, "trial")

    page.locator("a", has_text="Full trace").click()
    page.wait_for_load_state()
    events = page.locator("li.event")
    assert events.count() >= 7
    titles = page.locator("li.event .title").all_inner_texts()
    assert "session start" in titles
    assert "tool call: Skill" in titles and "tool call: Bash" in titles
    assert "tool result" in titles
    text = page.locator("ol.events").inner_text()
    assert "name,value" in text                       # the tool's output
    assert "input tokens" in text and "cost USD" in text and "duration ms" in text
    shot(browse, "trace")

    assert browse.console_errors == [] and browse.page_errors == []
    no_script_ran(browse)


def test_the_files_a_subject_made_show_as_text_and_download_as_bytes(browse: Any,
                                                                    viewer: Viewer):
    """An outcome trial's page: a hostile HTML file it made shows as text and never runs; a
    kept file downloads as the bytes the run kept, never opened as a page."""
    page = browse.page
    page.goto(f"{viewer.url}runs/{viewer.facts['made']}/trial?"
              + urlencode({"subject": "made", "case": "make-001", "trial": 0}))
    assert page.locator("section.outputs h2").inner_text().startswith("Files the subject made")
    assert PAYLOAD + " the notes" in page.locator("pre.output").inner_text()
    no_script_ran(browse)
    shot(browse, "outputs")
    links = page.locator("section.outputs a", has_text="download")
    assert links.count() == 2
    with page.expect_download() as info:
        links.nth(0).click()  # data.bin sorts first
    download = info.value
    assert download.suggested_filename == "data.bin"
    assert Path(download.path()).read_bytes() == bytes(range(256))
    no_script_ran(browse)


def test_hostile_strings_show_as_text_and_never_run(browse: Any, viewer: Viewer):
    page, first = browse.page, viewer.facts["first"]

    def visit(url: str, name: str) -> str:
        response = page.goto(url)
        assert response is not None and response.status == 200, url
        shot(browse, name)
        no_script_ran(browse)
        return str(page.locator("main").inner_text())

    run = f"{viewer.url}runs/{first}"
    visit(run, "run-with-hostile-strings")
    text = visit(f"{run}/trials?{urlencode({'case': 'xss-001'})}", "hostile-case")
    assert PAYLOAD in text                                              # the prompt, as text
    page.locator("a.trial-link").first.click()
    page.wait_for_load_state()
    no_script_ran(browse)
    assert PAYLOAD in page.locator("pre.answer").inner_text()           # the model's answer
    assert SCRIPT in page.locator("ol.tool-calls").inner_text()         # a tool call's input
    shot(browse, "hostile-trial")
    page.locator("a", has_text="Full trace").click()
    page.wait_for_load_state()
    no_script_ran(browse)
    assert page.locator("ol.events").inner_text().count(SCRIPT) >= 4   # input, output, text
    shot(browse, "hostile-trace")

    text = visit(f"{run}/trials?{urlencode({'case': WEIRD_ID})}", "hostile-case-id")
    assert WEIRD_ID in page.locator("main > h1").inner_text()
    page.locator("a.trial-link").first.click()
    page.wait_for_load_state()
    no_script_ran(browse)

    text = visit(f"{run}/trials?{urlencode({'case': 'err-001', 'outcome': 'errors'})}",
                 "errored-case")
    page.locator("a.trial-link").first.click()
    page.wait_for_load_state()
    no_script_ran(browse)
    assert "api_error:400" in page.locator("h2", has_text="Error").inner_text()
    assert PAYLOAD in page.locator(".error-box pre").inner_text()        # the error message
    shot(browse, "errored-trial")
    text = visit(viewer.url, "experiments-again")
    assert browse.console_errors == [] and browse.page_errors == []


RAW_PATHS = [
    "/../../../../etc/passwd",
    "/runs/../../../../etc/passwd",
    "/static/../app.py",
    "/static/..%2f..%2fapi%2fruns.py",
    "/static/%2e%2e%2fapp.py",
    "/static/%2Fetc%2Fpasswd",
    "/runs/..%2F..%2F..%2F..%2Fetc%2Fpasswd",
    "/runs/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/runs/%252e%252e%252f%252e%252e%252fetc%252fpasswd",
    "/runs/..",
    "/runs/%2e%2e",
    "/runs/%2Fetc%2Fpasswd",
    "/runs/..%5c..%5cetc%5cpasswd",
    "/runs/%00",
    "/favicon.ico/../../etc/passwd",
]


def test_paths_outside_the_lab_are_refused(browse: Any, viewer: Viewer):
    host = urlsplit(viewer.url)
    first, facts = viewer.facts["first"], viewer.facts
    stolen = str(facts["stolen"])
    trial = {"subject": "control", "case": "must-001"}
    refused = [
        *RAW_PATHS,
        f"/runs/{facts['symlinked']}",                       # a symlink out of the lab
        "/runs/escape",                                      # a tag naming a folder outside
        f"/runs/{quote(stolen, safe='')}",                   # an absolute path as the id
        f"/compare?{urlencode({'a': stolen, 'b': first})}",  # ... where a run id is looked up
        f"/compare?{urlencode({'a': '../outside/run', 'b': first})}",
        f"/runs/{first}/trace?{urlencode({**trial, 'trial': 90})}",   # trace: ../ outside
        f"/runs/{first}/trace?{urlencode({**trial, 'trial': 91})}",   # trace: symlink outside
        f"/runs/{first}/trace?{urlencode({**trial, 'trial': 92})}",   # trace: absolute path
    ]
    for path in refused:
        connection = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
        connection.request("GET", path)  # sent verbatim: no client-side normalisation
        response = connection.getresponse()
        body = response.read().decode("utf-8", "replace")
        connection.close()
        assert response.status in (400, 404), (path, response.status)
        assert SECRET not in body and "root:x:" not in body, path
    with httpx.Client(base_url=viewer.url.rstrip("/"), timeout=30) as client:
        for path in refused:
            if "/../" in path or path.endswith("/.."):
                continue  # httpx resolves raw dot segments itself (http.client sent them)
            response = client.get(path)
            assert response.status_code in (400, 404), (path, response.status_code)
            assert SECRET not in response.text and "root:x:" not in response.text
        # the trial lines that point outside exist; only their traces are refused
        ok = client.get(f"/runs/{first}/trial", params={**trial, "trial": 90})
        assert ok.status_code == 200 and SECRET not in ok.text
        # the symlinked run is not even listed
        assert facts["symlinked"] not in client.get("/").text

    page = browse.page
    for path in ("runs/..%2F..%2F..%2F..%2Fetc%2Fpasswd", "static/..%2f..%2fapi%2fruns.py",
                 f"runs/{first}/trace?{urlencode({**trial, 'trial': 91})}",
                 "../../../../etc/passwd"):
        response = page.goto(viewer.url + path)
        assert response is not None and response.status == 404, path
        text = page.locator("body").inner_text()
        assert SECRET not in text and "root:x:" not in text
    shot(browse, "refused")
    assert browse.blocked == []


def _color(locator: Any) -> str:
    return str(locator.evaluate("e => getComputedStyle(e).color"))


def test_the_case_page_says_which_skill_took_the_prompt(browse: Any, viewer: Viewer):
    """Issue 16 §5: per subject, the first skill each valid trial invoked ("taken by"), and
    per trial the skills it invoked; the report on the run page has the routing table."""
    page, second = browse.page, viewer.facts["second"]
    page.goto(f"{viewer.url}runs/{second}/trials?{urlencode({'case': 'must-001'})}")
    assert page.locator("table.stats td.routes").all_inner_texts() == [
        "csv-summary 2/2", "csv-summary 2/2"]                      # control, variant
    invoked = page.locator("table.trials tbody tr td:nth-child(6)").all_inner_texts()
    assert invoked == ["csv-summary"] * 4
    assert page.locator("td.reading").all_inner_texts() == ["invoked"] * 4
    right = page.locator(".badge.outcome-right")
    assert right.count() == 4 and _color(right.first) == "rgb(26, 127, 55)"   # --good
    # a must case the skill did not take: not invoked, wrong, red (DESIGN.md §8)
    page.goto(f"{viewer.url}runs/{second}/trials?{urlencode({'case': 'must-002'})}")
    wrong = page.locator(".badge.outcome-wrong")
    assert wrong.count() == 4 and _color(wrong.first) == "rgb(207, 34, 46)"   # --bad
    assert page.locator("td.reading").all_inner_texts() == ["not invoked"] * 4
    assert "passed" not in page.locator("table.trials").inner_text()
    page.goto(f"{viewer.url}runs/{second}/trials?{urlencode({'case': 'not-001'})}")
    assert page.locator("table.stats td.routes").all_inner_texts() == ["none 2/2"] * 2
    shot(browse, "case-routes")
    page.goto(f"{viewer.url}runs/{second}")
    routing = page.locator("#routing")
    assert routing.count() == 1
    assert "csv-summary" in routing.locator("table").inner_text()
    assert browse.console_errors == [] and browse.page_errors == []
    no_script_ran(browse)


def test_side_by_side_shows_both_runs(browse: Any, viewer: Viewer):
    page, first, second = browse.page, viewer.facts["first"], viewer.facts["second"]
    page.goto(viewer.url)
    form = page.locator("section.experiment", has_text="traced").locator("form.compare")
    form.locator("select[name=a]").select_option(first)
    form.locator("select[name=b]").select_option(second)
    form.locator("button").click()
    page.wait_for_load_state()
    assert page.url.startswith(viewer.url + "compare?")
    sides = page.locator(".pair .side h2").all_inner_texts()
    assert len(sides) == 2 and first in sides[0] and second in sides[1]
    assert page.locator("section.comparison h3").all_inner_texts() == ["control", "variant"]
    assert "no credible change" in page.locator(".verdict").first.inner_text()
    # every number `ix compare` computes, read off the page: median and p next to the interval
    from ix.api.experiments import compare_runs
    from ix.report.terminal import METRIC_NAMES

    expected = compare_runs(viewer.lab, [first, second])["comparisons"][0]["metrics"]
    table = page.locator("section.comparison").first.locator("table")
    head = table.locator("thead th").all_inner_texts()
    assert head[-3:] == ["posterior median", "P(B better)", "p"]
    rows = [r.locator("td").all_inner_texts() for r in table.locator("tbody tr").all()]
    assert len(rows) == len(expected)
    for cells, (name, m) in zip(rows, expected.items(), strict=True):
        assert cells[0] == METRIC_NAMES.get(name, name.replace("_", " "))  # "F1", "correct rate"
        for got, want in [(cells[-3], m["diff_median"]), (cells[-1], m["p_value"])]:
            if want is None:
                assert got == "n/a", (name, got)
            else:
                assert float(got) == pytest.approx(want, abs=5e-4), (name, got, want)
    assert "unadjusted" in page.locator("section.comparison .meta").first.inner_text()
    header = page.locator("table.side-by-side thead").inner_text()
    assert "control" in header and "variant" in header
    assert page.locator("table.side-by-side tbody tr").count() == 6
    shot(browse, "compare")
    assert browse.console_errors == [] and browse.page_errors == []
    no_script_ran(browse)


def test_only_get_and_head_with_strict_headers(viewer: Viewer):
    first = viewer.facts["first"]
    with httpx.Client(base_url=viewer.url.rstrip("/"), timeout=30) as client:
        for path in ("/", f"/runs/{first}", "/static/view.css", "/runs/nope"):
            response = client.get(path)
            csp = response.headers["content-security-policy"]
            assert "default-src 'self'" in csp and "script-src 'none'" in csp
            assert "img-src 'self' data:" in csp
            assert response.headers["x-content-type-options"] == "nosniff"
        assert client.head("/").status_code == 200
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            response = client.request(method, f"/runs/{first}")
            assert response.status_code == 405
            assert response.headers["allow"] == "GET, HEAD"
        # DNS rebinding: a page of another site that resolves to 127.0.0.1 is refused
        assert client.get("/", headers={"Host": "evil.example"}).status_code == 400


def test_a_host_other_than_loopback_warns(viewer: Viewer):
    proc, line = start_view(viewer.lab, "--host", "0.0.0.0")
    try:
        assert "http://0.0.0.0:" in line
        port = int(line.split("http://0.0.0.0:", 1)[1].split("/", 1)[0])
        response = httpx.get(f"http://127.0.0.1:{port}/", timeout=30)
        assert response.status_code == 200
    finally:
        _, err = stop(proc)
    assert "warning" in err and "--host 0.0.0.0" in err
    assert "reachable from other machines" in flat(err)  # wrapped to the width


def test_without_the_view_extra_it_says_how_to_install(tmp_path: Path, viewer: Viewer):
    blocker = tmp_path / "blocker"
    write(blocker / "starlette" / "__init__.py", "raise ImportError('starlette is blocked')\n")
    r = run_ix("view", "--lab", str(viewer.lab), "--port", "0",
               env={"PYTHONPATH": str(blocker)}, timeout=60)
    assert r.code == 2
    assert "pip install 'ix-lab[view]'" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_trace_file_is_a_gzipped_transcript_inside_the_run(viewer: Viewer):
    """What the trace page reads is what the engine wrote: the trial line's `trace`."""
    first = viewer.facts["first"]
    results = viewer.lab / "traced" / "results"
    line = next(json.loads(raw) for raw in
                (results / "trials.jsonl").read_text(encoding="utf-8").splitlines()
                if f'"run_id":"{first}"' in raw and '"probe_id":"must-002"' in raw)
    path = results / line["trace"]
    assert path.is_file() and path.name.endswith(".jsonl.gz")
    lines = gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()
    with httpx.Client(base_url=viewer.url.rstrip("/"), timeout=30) as client:
        page = client.get(f"/runs/{first}/trace", params={
            "subject": line["subject"], "case": "must-002", "trial": line["trial"]})
    assert page.status_code == 200
    assert page.text.count('<li class="event ') >= len(lines) > 3
