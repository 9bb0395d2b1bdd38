"""`ix._lazy`: the one helper for heavy third-party imports — deferred to first use, and
optionally started in the background without racing the first use."""

import subprocess
import sys
import textwrap


def run(code: str, *, stderr: bool = False) -> str:
    """Run `code` in a fresh interpreter (sys.modules is shared in-process) and return its
    output (`stderr`: its error output)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, check=True)
    return (proc.stderr if stderr else proc.stdout).strip()


def test_the_import_waits_for_the_first_attribute_use():
    out = run("""
        import sys
        from ix._lazy import lazy
        json = lazy("json.decoder")
        before = "json.decoder" in sys.modules
        error = json.JSONDecodeError
        real = sys.modules["json.decoder"].JSONDecodeError
        print(before, "json.decoder" in sys.modules, error is real)
    """)
    assert out == "False True True"


def test_a_missing_module_fails_at_first_use_not_at_declaration():
    out = run("""
        from ix._lazy import lazy
        gone = lazy("no_such_module_ix")
        try:
            gone.anything
        except ModuleNotFoundError as exc:
            print("raised", exc.name)
    """)
    assert out == "raised no_such_module_ix"


def test_preload_imports_in_the_background_and_a_concurrent_first_use_waits_for_it():
    out = run("""
        import sys, threading, time, types, importlib.abc, importlib.machinery
        from ix import _lazy

        started = threading.Event()

        class Slow(importlib.abc.Loader):  # a module whose import takes 0.3 s
            def create_module(self, spec):
                return None
            def exec_module(self, module):
                started.set()
                time.sleep(0.3)
                module.value = 42

        class Finder(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name == "slow_ix_test":
                    return importlib.machinery.ModuleSpec(name, Slow())
                return None

        sys.meta_path.insert(0, Finder())
        slow = _lazy.lazy("slow_ix_test")
        loading = _lazy.preload("slow_ix_test")
        assert started.wait(5)
        again = _lazy.preload("slow_ix_test")  # in flight: waited for, not imported twice
        results = []
        users = [threading.Thread(target=lambda: results.append(slow.value)) for _ in range(4)]
        for u in users:
            u.start()
        for u in users:
            u.join()
        again.join()
        print(results, loading.done(), "slow_ix_test" in _lazy._preloading)
        _lazy.preload("slow_ix_test").join()  # already imported: nothing to do
    """)
    assert out == "[42, 42, 42, 42] True False"


def test_a_failed_preload_is_silent_and_the_first_use_raises():
    out = run("""
        from ix._lazy import lazy, preload
        preload("no_such_module_ix").join()
        try:
            lazy("no_such_module_ix").x
        except ImportError:
            print("raised at use")
    """)
    assert out == "raised at use"


def test_a_lazy_module_keeps_each_attribute_it_looked_up():
    """After the first use an attribute is the module's own (no `__getattr__` per call in the
    statistics' inner loops)."""
    out = run("""
        from ix._lazy import lazy
        json = lazy("json")
        first = json.dumps
        print("dumps" in vars(json), json.dumps is first, "loads" in vars(json))
    """)
    assert out == "True True False"


def test_the_statistics_report_and_judge_modules_import_no_numpy_scipy_or_jinja2():
    """numpy, scipy and jinja2 come through `ix._lazy` at the first computation, so every ix
    module can import these at its top (issue 17)."""
    out = run("""
        import importlib, pkgutil, sys
        import ix.eval, ix.report, ix.stats
        for package in (ix.stats, ix.eval, ix.report):
            for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
                importlib.import_module(info.name)
        importlib.import_module("ix.runtimes.judge")
        importlib.import_module("ix.query.aggregate")
        print(sorted({m.split(".")[0] for m in sys.modules} & {"numpy", "scipy", "jinja2"}))
    """)
    assert out == "[]"


def test_reading_a_run_loads_no_numpy_or_scipy(tmp_path):
    """`ix ls`, `ix report RUN` (json, table, md), `ix results`, the closed-form `ix plan
    --mde` and the viewer's run and case pages read what the run wrote (the summary, its
    report.json, the up-to-date index), or compute elementary formulas: numpy and scipy load
    only when a statistic must be computed (issue 33)."""
    from conftest import comparison_experiment, ix_in_process

    lab = tmp_path / "lab"
    exp = comparison_experiment(lab, n_must=3, n_not=2, trials=3, control=0.3,
                                variants={"better": 0.9})
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    # the first query builds the lab's index (scanning the log with numpy); an index that is
    # up to date is opened as it is
    assert ix_in_process("results", "--lab", str(lab)).code == 0
    run_id = next((exp / "results" / "runs").iterdir()).name
    for argv in (["ls"], ["report", run_id, "--format", "json"], ["report", run_id],
                 ["report", run_id, "--format", "md"], ["results"], ["plan", "--mde", "0.1"],
                 ["plan", "--mde", "0.1", "--paired", "--trials", "5"], ["ls"]):
        out = run(f"""
            import sys
            from ix.cli.main import main
            sys.argv = ["ix", *{argv!r}, "--lab", {str(lab)!r}]
            try:
                main()
            except SystemExit as exc:
                assert not exc.code, exc.code
            print(file=sys.stderr)
            print(sorted({{m.split(".")[0] for m in sys.modules}} & {{"numpy", "scipy"}}),
                  "yaml" in sys.modules, "ix.eval.schemas" in sys.modules, file=sys.stderr)
        """, stderr=True)
        assert out.splitlines()[-1].startswith("[] "), (argv, out)
        # a report reads the summary the run checked, without its schema; `ix ls` of a lab
        # listed before (the census is kept) reads no YAML
        assert out.splitlines()[-1].endswith(" False") or argv[0] != "report", (argv, out)
    assert out.splitlines()[-1] == "[] False False", out
    out = run(f"""
        import sys
        from pathlib import Path
        from starlette.testclient import TestClient
        from ix.view.app import create_app
        from ix.view.server import warm
        app = create_app(Path({str(lab)!r}))
        warm(app.state.lookup)  # what `ix view` does at startup, in the background
        client = TestClient(app, base_url="http://127.0.0.1")
        for path in ("/runs/{run_id}", "/runs/{run_id}/trials?case=must-001"):
            assert client.get(path).status_code == 200, path
        print(sorted({{m.split(".")[0] for m in sys.modules}} & {{"numpy", "scipy"}}))
    """)
    assert out.splitlines()[-1] == "[]", out


#: The function-level imports of ix modules that stay, each deferring a heavy third-party
#: import or an optional extra: (file under src/ix, function).
DEFERRED = {
    ("__init__.py", "__getattr__"),  # `import ix` loads the API (pydantic, ...) on first use
    ("cli/__init__.py", "run_here"),  # typer, the command tree: not for `ix --version`
    ("cli/main.py", "_fail"),  # rich: only when there is an error to print
    ("cli/mcp.py", "mcp"),  # the MCP server: an optional extra
    ("cli/view.py", "view"),  # uvicorn and starlette: an optional extra
    # the summary's schema (sixty-odd pydantic types): only when a summary must be checked
    ("store/summaries.py", "_schemas"),
    # the experiment loader (YAML, the lab's schema): `ix ls` only when the lab changed
    ("api/census.py", "_load"),
    # the HTML report's charts and page (jinja2): only for `ix report --format html` (and
    # a run's `reporters: [html]`)
    ("report/outputs.py", "report_text"),
    # `ix leaderboard`'s intervals: only for a credibility other than the run's (the pytest
    # plugin imports ix.testing in every pytest session of a project with ix installed)
    ("testing/_asserts.py", "_estimate"),
}


def test_ix_modules_import_each_other_at_the_top():
    """No module of ix imports another inside a function, except to defer a heavy
    third-party import (`DEFERRED`); `if TYPE_CHECKING:` blocks are not functions."""
    import ast
    from pathlib import Path

    import ix

    root = Path(ix.__file__).parent
    found = set()
    for path in sorted(root.rglob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                names = ([node.module or ""] if isinstance(node, ast.ImportFrom) else
                         [a.name for a in node.names] if isinstance(node, ast.Import) else [])
                if any(n == "ix" or n.startswith("ix.") for n in names):
                    found.add((path.relative_to(root).as_posix(), fn.name))
    assert found == DEFERRED


def test_the_console_script_collects_garbage_again_before_the_command_runs(tmp_path):
    """`ix` imports its modules with the collector off, then freezes what they made and turns
    it back on before the command runs: a long `ix run` or `ix view` collects as usual."""
    out = run(f"""
        import gc, sys
        from ix.cli import main
        sys.argv = ["ix", "ls", "--lab", {str(tmp_path)!r}]
        try:
            main()
        except SystemExit:
            pass
        print(gc.isenabled(), gc.get_freeze_count() > 1000)
    """)
    assert out.splitlines()[-1] == "True True"


def test_work_in_the_background_is_joined_and_its_failure_left_to_the_real_use():
    out = run("""
        import threading
        from ix._lazy import in_background
        seen = []
        started = threading.Event()
        def build():
            started.wait(5)
            seen.append(threading.current_thread().name)
        loading = in_background(build, "ix-test")
        print(loading.done(), end=" ")
        started.set()
        loading.join()
        print(loading.done(), seen, end=" ")
        failed = in_background(lambda: 1 / 0)
        failed.join()
        print(failed.done())
    """, stderr=False)
    assert out == "False True ['ix-test'] True"


def test_the_summary_checker_is_built_in_the_background_and_a_check_waits_for_it():
    """`ix run` builds it while the trials run (`warm_checker`): the check at the end finds
    it built, and no second one is built by a check that comes while it is being built."""
    out = run("""
        import sys
        from ix.store import summaries
        summaries.warm_checker()
        summaries.warm_checker()  # once per process
        print(len(summaries._warming), end=" ")
        print(summaries._summary_problems({}) != [], end=" ")  # waits, then checks
        from ix.eval.schemas import summary_adapter
        print(summary_adapter.cache_info().misses)
    """)
    assert out == "1 True 1"


def test_exit_waits_for_an_import_and_work_still_running_in_the_background(tmp_path):
    """A daemon thread still importing (a C extension) while the interpreter tears down can
    crash it: `ix subjects test` failing at once on a missing key while `anthropic` was being
    preloaded exited on SIGSEGV. Exit waits for both kinds of background thread to end."""
    (tmp_path / "slow_to_import.py").write_text(textwrap.dedent(f"""
        import time, pathlib
        time.sleep(0.3)
        pathlib.Path({str(tmp_path / 'imported')!r}).write_text("yes")
    """))
    run(f"""
        import sys, time, pathlib
        sys.path.insert(0, {str(tmp_path)!r})
        from ix._lazy import in_background, preload
        preload("slow_to_import")
        def work():
            time.sleep(0.3)
            pathlib.Path({str(tmp_path / 'worked')!r}).write_text("yes")
        in_background(work)
    """)
    assert (tmp_path / "imported").read_text() == "yes"
    assert (tmp_path / "worked").read_text() == "yes"
