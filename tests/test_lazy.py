"""`ix._lazy`: the one helper for heavy third-party imports — deferred to first use, and
optionally started in the background without racing the first use."""

import subprocess
import sys
import textwrap


def run(code: str) -> str:
    """Run `code` in a fresh interpreter (sys.modules is shared in-process) and return its
    output."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, check=True)
    return proc.stdout.strip()


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
