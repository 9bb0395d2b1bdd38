"""`ix run` keeps the report's trial sections and statistics in the run's `report.json`, so
`ix report` reads neither the trials nor computes again what the run computed (issue 33)."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import comparison_experiment, ix_in_process, run_ix, write
from ix.api import reports
from ix.eval.schemas import summary_adapter


def _lab(tmp_path: Path) -> tuple[Path, Path]:
    lab = tmp_path / "lab"
    exp = comparison_experiment(lab, n_must=4, n_not=3, trials=3, control=0.4,
                                variants={"better": 0.9})
    config = exp / "experiment.yaml"
    # errored trials too, so the failure analysis has error kinds and example messages
    write(config, config.read_text(encoding="utf-8").replace(
        "activation_rates:", "error_rates: {must-000: 0.5, not-001: 0.3}, activation_rates:"))
    assert ix_in_process("run", "--lab", str(lab)).code == 0
    run_dir = next((exp / "results" / "runs").iterdir())
    return lab, run_dir


def test_the_report_of_a_new_run_reads_its_report_json_not_its_trials(tmp_path):
    lab, run_dir = _lab(tmp_path)
    stored = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert (stored["run_id"], stored["finished_at"]) == (summary["run_id"],
                                                          summary["finished_at"])
    args = ("report", run_dir.name, "--format", "json", "--lab", str(lab))
    from_trials = json.loads(ix_in_process(*args).stdout)  # made from what the run kept...
    assert from_trials["failures"]["errored_trials"] > 0
    assert from_trials["failures"]["cases"][0]["prompt"]  # from the case files, when reported
    log = run_dir.parent.parent / "trials.jsonl"
    lines, before = log.read_bytes(), log.stat()
    # ...so the trials are not read: the same report with the log blanked (same size and time),
    # by the real command (a fresh process: nothing of an earlier report in its memory)
    log.write_bytes(b"\n" * len(lines))
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))
    kept = run_ix(*args)
    assert kept.code == 0, kept.stderr
    assert json.loads(kept.stdout) == from_trials
    # once the log changed since (another run appended, a hand edit), or for another version
    # of the summary (a run continued since), report.json is not used: the trials are read,
    # here none
    log.write_bytes(b"\n" * (len(lines) + 1))
    assert json.loads(ix_in_process(*args).stdout)["breakdown"] == []
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))
    log.write_bytes(b"\n" * len(lines))
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))
    (run_dir / "report.json").write_text(json.dumps({**stored, "finished_at": "2000-01-01"}),
                                         encoding="utf-8")
    stale = json.loads(ix_in_process(*args).stdout)
    assert stale["breakdown"] == [] and stale["failures"]["errored_trials"] == 0
    log.write_bytes(lines)
    again = json.loads(ix_in_process(*args).stdout)
    assert again == from_trials  # the trials read back give the very same report


def test_a_summary_is_checked_once_as_the_run_writes_it_and_not_again_while_unchanged(tmp_path):
    """report.json keeps the sha256 of the summary the run checked: `ix report` does not build
    the summary's checker for those very bytes, and checks any other bytes as before."""
    lab, run_dir = _lab(tmp_path)
    raw = (run_dir / "summary.json").read_bytes()
    kept = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    assert kept["summary_sha256"] == hashlib.sha256(raw).hexdigest()
    summary_adapter.cache_clear()
    assert reports.report(lab, run_dir.name)["run"]["run_id"] == run_dir.name
    assert summary_adapter.cache_info().currsize == 0  # the checker was never built
    # the same summary with other bytes (a hand edit that breaks it) is checked: exit 2
    broken = json.loads(raw)
    broken["subjects"] = "none"
    (run_dir / "summary.json").write_text(json.dumps(broken), encoding="utf-8")
    r = run_ix("report", run_dir.name, "--format", "json", "--lab", str(lab))
    assert r.code == 2 and "summary.json" in r.stderr and "subjects" in r.stderr, r.stderr


def _yaml_read_by(code: str) -> bool:
    """Whether `code`, run in a fresh interpreter, imported PyYAML (it prints its result)."""
    done = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\n"
                           "print('yaml' in sys.modules)"], capture_output=True, text=True,
                          check=True)
    return done.stdout.split()[-1] == "True"


def test_report_json_keeps_what_the_report_reads_from_spec_and_case_files(tmp_path):
    """The spec's git commit and description and the failing cases' prompts are kept too,
    each with what says it is still so (the spec's sha256, the case files' state): a report
    of an unchanged run parses no YAML, and an edit of either is read again."""
    lab, run_dir = _lab(tmp_path)
    kept = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    failing = [c["probe_id"] for c in kept["failures"]["cases"]]
    assert failing and sorted(kept["prompts"]["by_case"]) == sorted(failing)
    before = reports.report(lab, run_dir.name)
    assert before["failures"]["cases"][0]["prompt"] == \
        kept["prompts"]["by_case"][before["failures"]["cases"][0]["probe_id"]]
    assert not _yaml_read_by(f"from ix.api.reports import report\n"
                             f"report({str(lab)!r}, {run_dir.name!r})")
    # an edited spec is read again
    spec = run_dir / "spec.yaml"
    text = spec.read_text(encoding="utf-8")
    assert "\ngit_commit: null\n" in text
    spec.write_text(text.replace("\ngit_commit: null\n", "\ngit_commit: abc1234\n"),
                    encoding="utf-8")
    assert reports.report(lab, run_dir.name)["run"]["git_commit"] == "abc1234"
    # and so is an edited case file
    case = before["failures"]["cases"][0]["probe_id"]
    path = run_dir.parents[2] / "cases" / f"{case}.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nand one more line\n",
                    encoding="utf-8")
    after = {c["probe_id"]: c["prompt"] for c in
             reports.report(lab, run_dir.name)["failures"]["cases"]}
    assert after[case].endswith("and one more line")
