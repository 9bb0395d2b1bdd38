"""A subject's own `concurrency` limits its trials in flight under the run's global limit."""

import json
import sys
import textwrap

from conftest import run_ix, write


def test_a_subject_limit_holds_under_a_larger_global_limit(lab, tmp_path):
    log = tmp_path / "spans.log"
    script = write(tmp_path / "slow.py", textwrap.dedent(f"""
        import sys, time
        who = sys.argv[1]
        t0 = time.time(); time.sleep(0.15); t1 = time.time()
        with open({str(log)!r}, "a") as f:
            f.write(f"{{who}} {{t0}} {{t1}}\\n")
    """))
    d = lab / "c"
    write(d / "experiment.yaml", f"""
        name: c
        trials: 3
        concurrency: 8
        sensor: exit_code
        subjects:
          - name: careful
            concurrency: 1
            runtime: {{kind: command, argv: [{sys.executable}, {script}, careful]}}
          - name: eager
            runtime: {{kind: command, argv: [{sys.executable}, {script}, eager]}}
    """)
    for i in range(2):
        write(d / "cases" / f"must-{i}.md", "---\nexpectation: must_trigger\n---\nx\n")
    r = run_ix("run", "--lab", str(lab), "--json")
    assert r.code == 0, r.output
    assert json.loads(r.stdout)["errors"] == 0
    spans = [line.split() for line in log.read_text().splitlines()]
    careful = sorted((float(a), float(b)) for who, a, b in spans if who == "careful")
    eager = sorted((float(a), float(b)) for who, a, b in spans if who == "eager")
    assert len(careful) == len(eager) == 6
    assert all(careful[i][1] <= careful[i + 1][0] + 0.01 for i in range(5))  # one at a time
    overlapping = sum(1 for i in range(5) if eager[i][1] > eager[i + 1][0] + 0.01)
    assert overlapping >= 1  # the other subject did run in parallel
