"""The index keeps what each run's spec.yaml says that a query's scope needs (its status and,
for an import, its origin runs), read again only when a spec changes: `ix results` on an
unchanged lab parses no YAML, and a run that completes (or is edited) after its trials were
indexed is scoped by what its spec says now (issue 33)."""

import json
import subprocess
import sys
from pathlib import Path

from conftest import ix_in_process, mock_experiment
from ix.api.results import query_results
from ix.query.index import INDEX_DIR, MANIFEST


def _runs(lab: Path) -> list[str]:
    return sorted(p.name for p in (lab / "exp" / "results" / "runs").iterdir())


def test_the_scope_follows_each_runs_spec_and_an_unchanged_lab_reads_no_yaml(lab: Path):
    mock_experiment(lab, "exp", n_must=2, n_not=1, n_edge=0, trials=1)
    for _ in range(2):
        assert ix_in_process("run", "--lab", str(lab), "--progress", "none").code == 0
    first, second = _runs(lab)
    assert query_results(lab, all_runs=False).scope.runs == (second,)
    manifest = json.loads((lab / INDEX_DIR / MANIFEST).read_text(encoding="utf-8"))
    specs = manifest["sources"]["exp"]["specs"]
    assert {r: f["status"] for r, f in specs.items()} == {first: "completed",
                                                          second: "completed"}
    code = (f"from ix.api.results import query_results\n"
            f"print(query_results({str(lab)!r}, all_runs=False).scope.runs)\n"
            "import sys\nprint('yaml' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split("\n")[:2] == [str((second,)), "False"], done.stdout
    # the second run's spec says it is still going (its trials unchanged): out of scope
    spec = lab / "exp" / "results" / "runs" / second / "spec.yaml"
    spec.write_text(spec.read_text(encoding="utf-8").replace("status: completed",
                                                             "status: running"),
                    encoding="utf-8")
    assert query_results(lab, all_runs=False).scope.runs == (first,)
    # a spec that no longer reads: the run is not counted as completed either
    spec.write_text("status: [unclosed\n", encoding="utf-8")
    assert query_results(lab, all_runs=False).scope.runs == (first,)
    spec.unlink()  # no spec at all: trials written before run folders had one, completed
    assert query_results(lab, all_runs=False).scope.runs == (second,)
