"""What a run imports for its summary while the trials run: numpy and scipy.special, and
for comparisons scipy.integrate and scipy.optimize; never scipy.stats (~0.5 s, the heaviest
of the statistics' libraries) — not for comparisons, a goal's verdict and sizing, or when to
stop adding trials."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import comparison_experiment, mock_experiment

# A fresh interpreter (sys.modules is shared in-process) runs the experiment through the API
# and says, for each of the statistics' libraries, the thread that imported it ("-": none).
PROBE = textwrap.dedent("""
    import sys, threading
    from ix.api.experiments import run
    NAMES = ("scipy.special", "scipy.stats", "scipy.integrate", "scipy.optimize")
    where = {}
    class Watch:
        def find_spec(self, name, path, target=None):
            if name in NAMES:
                where.setdefault(name, threading.current_thread().name)
    sys.meta_path.insert(0, Watch())
    [result] = run(sys.argv[1])
    print(result.status, *(f"{n}:{where.get(n, '-')}" for n in NAMES))
""")


def _imports(lab: Path) -> str:
    return subprocess.run([sys.executable, "-c", PROBE, str(lab)], capture_output=True,
                          text=True, timeout=120, check=True).stdout.strip()


#: One subject: numpy and scipy.special, imported while the trials run; nothing else.
ALONE = ("completed scipy.special:ix-preload scipy.stats:- scipy.integrate:- "
         "scipy.optimize:-")
#: Several: the comparisons' quadrature and root finder too, also while the trials run.
COMPARED = ("completed scipy.special:ix-preload scipy.stats:- scipy.integrate:ix-preload "
            "scipy.optimize:ix-preload")


def test_a_run_of_one_subject_without_a_goal_imports_no_scipy_stats(tmp_path):
    mock_experiment(tmp_path, n_must=3, n_not=3, n_edge=0, trials=3)
    assert _imports(tmp_path) == ALONE


def test_a_run_that_compares_subjects_imports_what_comparing_needs_off_the_main_thread(
        tmp_path):
    """The comparisons' Student t comes from scipy.special (`ix.stats.case_level`); their
    difference intervals need scipy.integrate and scipy.optimize, which load in the
    background rather than after the last trial."""
    comparison_experiment(tmp_path, n_must=3, n_not=3, trials=3, control=0.9,
                          variants={"b": 0.5, "c": 0.7})
    assert _imports(tmp_path) == COMPARED


def test_a_run_with_a_goal_sized_imports_no_scipy_stats(tmp_path):
    """Deciding a goal, and sizing it when it ends inconclusive, takes the tails it needs
    from scipy.special (`ix.stats.tails`)."""
    comparison_experiment(tmp_path, n_must=3, n_not=3, trials=3, control=0.9,
                          variants={"b": 0.5},
                          goal="goal: {hypothesis: h, compare: [control, b]}\n")
    assert _imports(tmp_path) == COMPARED
    summary = json.loads((tmp_path / "e" / "results" / "summary-latest.json").read_text())
    goal = summary["goal"]
    assert goal["verdict"] == "inconclusive" and goal["suggestion"]["cases"] > 3, goal


def test_a_run_of_one_subject_under_trials_auto_imports_no_scipy_stats(tmp_path):
    """The stopping rule's estimates (`ix.stats.sequential`) need only scipy.special."""
    mock_experiment(tmp_path, n_must=3, n_not=3, n_edge=0, trials=None,
                    extra_yaml="trials: auto\nmin_trials: 3\nmax_trials: 5\n")
    assert _imports(tmp_path) == ALONE


def test_the_experiments_load_before_the_statistics_start_importing(tmp_path):
    """The background import begins when the run opens, where the trials' waiting hides it,
    not while the case files load: that is CPU-bound work, which the import (holding the GIL)
    would only slow down."""
    mock_experiment(tmp_path, n_must=3, n_not=3, n_edge=0, trials=3)
    probe = textwrap.dedent("""
        import sys
        from ix import _lazy
        from ix.api import experiments
        seen = []
        prepare = experiments._prepare
        def watched(*args, **kwargs):
            jobs = prepare(*args, **kwargs)
            seen.append(("numpy" in sys.modules, sorted(_lazy._preloading)))
            return jobs
        experiments._prepare = watched
        [result] = experiments.run(sys.argv[1])
        print(result.status, seen, "numpy" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True,
                         text=True, timeout=120, check=True).stdout.strip()
    assert out == "completed [(False, [])] True"


@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_a_model_sdk_is_imported_in_the_background_by_a_run_and_never_by_a_dry_run(
        tmp_path, sdk):
    """Building a runtime (`ix validate`, `ix plan`, a dry run) only checks that its SDK is
    installed; the run imports it off the main thread as it opens: a subject's (anthropic),
    or a judge's inside a sensor (openai, the subject on the mock runtime). A command that
    built the runtime and exited while the SDK imported in the background could crash."""
    d = tmp_path / "api"
    (d / "cases").mkdir(parents=True)
    api = f"{{kind: {sdk}, model: m, base_url: 'http://127.0.0.1:9', retries: 0}}"
    if sdk == "anthropic":
        (d / "experiment.yaml").write_text(
            f"name: api\nskill: target\ntrials: 1\nruntime: {api}\n")
    else:
        (d / "experiment.yaml").write_text(
            "name: api\nskill: target\ntrials: 1\nruntime: {kind: mock}\n"
            "sensors: [{kind: activation}, {kind: llm_judge, agent: judge.md}]\n")
        (d / "judge.md").write_text(f"---\nname: q\nruntime: {api}\ndimensions: [good]\n---\n"
                                    "Is it good? {{ observation.content }}\n")
    (d / "cases" / "one.md").write_text("---\nexpectation: must_trigger\n---\nHello\n")
    (tmp_path / "skills" / "target").mkdir(parents=True)
    (tmp_path / "skills" / "target" / "SKILL.md").write_text(
        "---\nname: target\ndescription: Says hello.\n---\nSay hello.\n")
    probe = textwrap.dedent("""
        import sys, threading
        from ix.api import experiments
        sdk = sys.argv[2]
        where = []  # the thread of each import of the SDK's modules (not of `find_spec`)
        sys.addaudithook(lambda event, args: where.append(threading.current_thread().name)
                         if event == "import" and args[0].startswith(sdk + ".") else None)
        experiments.dry_run(sys.argv[1])
        for thread in threading.enumerate():  # anything it started in the background, ended
            if thread.name.startswith("ix-"):
                thread.join()
        print(where, sdk in sys.modules, end=" ")
        experiments.run(sys.argv[1])  # no server: the requests fail
        print(where[:1])  # the first (the SDK itself); a client may import more as it is used
    """)
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path), sdk],
                         capture_output=True, text=True, timeout=120, check=True,
                         env={**os.environ, "ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}
                         ).stdout.strip()
    assert out == "[] False ['ix-preload']"
