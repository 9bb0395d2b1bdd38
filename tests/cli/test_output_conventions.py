"""One rule each, through the real `ix`: the file mode of reports and exports, decimals in
`ix query` and the viewer, and timestamps in the HTML report's header that never break."""

import os
import re
import stat

from conftest import ix_in_process, mock_experiment, run_ix


def _run(lab) -> str:
    mock_experiment(lab, rates={"must-001": 0.75, "not-001": 0.3}, trials=3)
    r = ix_in_process("run", "--lab", str(lab), "--json", "--progress", "none")  # set-up
    assert r.code == 0, r.output
    return re.search(r'"run_id": "([^"]+)"', r.stdout).group(1)


def test_reports_and_exports_all_get_the_mode_a_new_shared_file_gets(lab, tmp_path):
    run_id = _run(lab)
    mask = os.umask(0o022)
    os.umask(mask)
    written = []
    for fmt in ("table", "md", "json", "html"):
        path = tmp_path / f"report.{fmt}"
        r = run_ix("report", run_id, "--lab", str(lab), "--format", fmt, "--out", str(path))
        assert r.code == 0, r.output
        written.append(path)
    for fmt in ("csv", "json", "jsonl", "parquet"):
        path = tmp_path / f"export.{fmt}"
        r = run_ix("export", run_id, "--lab", str(lab), "--format", fmt, "--out", str(path))
        assert r.code == 0, r.output
        written.append(path)
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in written}
    assert set(modes.values()) == {oct(0o666 & ~mask)}, modes
    os.chmod(written[0], 0o640)  # a file replaced keeps the mode its owner gave it
    assert run_ix("report", run_id, "--lab", str(lab), "--out", str(written[0])).code == 0
    assert stat.S_IMODE(written[0].stat().st_mode) == 0o640


def test_query_prints_every_fraction_with_three_decimals(lab):
    _run(lab)
    r = run_ix("query", "SELECT 0.75 AS a, 0.3 AS b, 8/9 AS c, avg(score) AS rate, "
                        "count(*) AS n, 0.00001 AS tiny FROM trials", "--lab", str(lab))
    assert r.code == 0, r.output
    row = r.stdout.strip().splitlines()[-1]
    assert re.search(r"0\.750 .*0\.300 .*0\.889 .*\d\.\d{3} .*\b\d+ .*1\.00e-05", row), row
    assert not re.search(r"\b0\.(75|3|8889)\b", r.stdout)


def test_the_viewer_prints_fractions_by_the_same_rule():
    from ix.view.pages import environment

    num = environment().filters["num"]
    assert [num(0.75), num(0.3), num(8 / 9), num(1.0), num(12345.5)] == \
        ["0.750", "0.300", "0.889", "1.000", "12,345.500"]
    assert num(3) == "3" and num(None) == "n/a" and num(0.5, 1) == "0.5"


def test_html_header_timestamps_and_run_id_never_break_mid_token(lab, tmp_path):
    run_id = _run(lab)
    out = tmp_path / "r.html"
    assert run_ix("report", run_id, "--lab", str(lab), "--format", "html", "--out",
                  str(out)).code == 0
    html = out.read_text(encoding="utf-8")
    assert re.search(r'<dd class="stamp">\d{4}-\d\d-\d\dT[\d:.]+Z</dd>', html)
    assert f'<code class="stamp">{run_id}</code>' in html
    rule = re.search(r"\.ix-report \.stamp \{([^}]*)\}", html)
    assert rule and "white-space: nowrap" in rule.group(1) and \
        "overflow-wrap: normal" in rule.group(1)
