"""User SQL reads the lab's views and nothing else (issue 14, item 1).

`ix query` and the MCP tool `query_results` run SQL that a person — or a model that read
untrusted case text — wrote. Every attack here reads a file outside the lab, lists a folder,
reaches a real HTTP server on 127.0.0.1, writes a file, attaches a database, installs or loads
an extension, or changes a setting; each also wrapped in EXPLAIN and EXPLAIN ANALYZE (which
runs what it explains). Each must end in one `ix: error:` line naming the rule, exit 2, with
nothing read (the secret is in no output, the server saw no request) and nothing written.

`ix query` runs each CLI attack in process (`ix_in_process`: which SQL is refused with which
message is logic); a sample of them (`REAL_CLI_ATTACKS`: a read, the network, a write), a
legitimate query, `ix results` and `ix export` go through the real `ix` (`run_ix`).
"""

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import duckdb
import pytest

from conftest import ix_in_process, mock_experiment, run_ix, tree_digest
from ix.domain.errors import ConfigError
from ix.query.sql_guard import check_read_only, sql_error
from ix.query.views import connect

RULE = "only read-only queries (SELECT) over the views trials, trials_all, cases are allowed"
SECRET = "SECRET-7f3a9c-do-not-leak"
WRAPS = ("", "EXPLAIN ", "EXPLAIN ANALYZE ")


class Outside:
    """Files outside the lab: a secret in several formats, and where attacks would write."""

    def __init__(self, root: Path, url: str):
        root.mkdir()
        self.root = root
        self.url = url
        self.text = root / "shadow"
        self.text.write_text(f"root:{SECRET}:19000:0:99999:7:::\n")
        self.json = root / "secret.json"
        self.json.write_text(json.dumps({"token": SECRET}) + "\n")
        self.parquet = root / "secret.parquet"
        duckdb.sql(f"COPY (SELECT '{SECRET}' AS token) TO '{self.parquet}' (FORMAT parquet)")
        self.target = root / "authorized_keys"
        self.database = root / "stolen.duckdb"
        self.folder = root / "exported"

    def written(self) -> list[Path]:
        return [p for p in (self.target, self.database, self.folder) if p.exists()]


def attacks(o: Outside) -> dict[str, str]:
    """Every way out of the views: name -> SQL."""
    inner = f"SELECT content FROM read_text(''{o.text}'')"
    return {
        "read_text": f"SELECT content FROM read_text('{o.text}')",
        "read_blob": f"SELECT content FROM read_blob('{o.text}')",
        "read_csv": f"SELECT * FROM read_csv('{o.text}', sep = ':', header = false)",
        "read_csv_glob": f"SELECT * FROM read_csv('{o.root}/*', header = false)",
        "read_json": f"SELECT * FROM read_json('{o.json}')",
        "read_parquet": f"SELECT * FROM read_parquet('{o.parquet}')",
        "parquet_metadata": f"SELECT * FROM parquet_metadata('{o.parquet}')",
        "sniff_csv": f"SELECT * FROM sniff_csv('{o.text}')",
        "replacement_scan": f"SELECT * FROM '{o.text}'",
        "query_function": f"SELECT * FROM query('{inner}')",
        "passwd": "SELECT * FROM read_csv('/etc/passwd', sep = ':', header = false)",
        "glob": f"SELECT * FROM glob('{o.root}/*')",
        "http": f"SELECT content FROM read_text('{o.url}/shadow')",
        "http_parquet": f"SELECT * FROM read_parquet('{o.url}/secret.parquet')",
        "copy": (f"COPY (SELECT 'ssh-ed25519 AAAA attacker') TO '{o.target}' "
                 "(HEADER false, QUOTE '')"),
        "copy_trials": f"COPY trials TO '{o.target}'",
        "attach": f"ATTACH '{o.database}' AS stolen",
        "export": f"EXPORT DATABASE '{o.folder}'",
        "install": "INSTALL httpfs",
        "load": "LOAD httpfs",
        "load_file": f"LOAD '{o.root}/evil.duckdb_extension'",
        "pragma": "PRAGMA version",
        "pragma_profile": f"PRAGMA profiling_output = '{o.target}'",
        "set": "SET enable_external_access = true",
        "set_paths": f"SET allowed_paths = ['{o.text}']",
        "call": "CALL pragma_version()",
        "create": f"CREATE TABLE t AS SELECT * FROM read_text('{o.text}')",
    }


#: Harmless on their own (they read no file and change nothing): only the statement check
#: stops them, so the locked connection is not asked to.
HARMLESS = ("pragma", "call")

#: The attacks run through the CLI, each wrapped each way (the MCP test runs them all).
CLI_ATTACKS = ("read_text", "read_csv", "read_parquet", "read_json", "glob", "http", "copy",
               "attach", "install", "load", "pragma", "set")

#: The CLI attacks refused by the real command, in a subprocess; the rest run in process.
REAL_CLI_ATTACKS = {("read_text", ""), ("http", "EXPLAIN ANALYZE "), ("copy", "")}


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on 127.0.0.1 that serves the secret and records every request."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            body = SECRET.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_HEAD = do_GET

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # polled every 0.05 s, not 0.5: `shutdown` waits for the next poll, after every test
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()


def _build_index(lab: Path) -> None:
    r = ix_in_process("query", "--lab", str(lab), "SELECT count(*) FROM trials")
    assert r.code == 0, r.output


@pytest.fixture(scope="module")
def _ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The lab every test reads, made once: a run (set-up, in process), kept as a pristine
    copy beside it."""
    root = tmp_path_factory.mktemp("lockdown")
    lab, pristine = root / "lab", root / "pristine"
    mock_experiment(lab, trials=2)
    r = ix_in_process("run", "--lab", str(lab))
    assert r.code == 0, r.output
    shutil.copytree(lab, pristine, symlinks=True)
    return lab, pristine


@pytest.fixture
def indexed(_ran: tuple[Path, Path]) -> Path:
    """A lab with a run, its index built (so a refused query has nothing left to write):
    the module's run, restored at its own path (spec.yaml records it) from the pristine copy,
    and its index built afresh for this test (the index keys a log by its inode, which the
    copy changes)."""
    lab, pristine = _ran
    shutil.rmtree(lab)
    shutil.copytree(pristine, lab, symlinks=True)
    _build_index(lab)
    return lab


@pytest.mark.parametrize("wrap", WRAPS, ids=["plain", "explain", "explain-analyze"])
@pytest.mark.parametrize("name", CLI_ATTACKS)
def test_ix_query_refuses_every_way_out_of_the_views(indexed, tmp_path, server, name, wrap):
    url, seen = server
    outside = Outside(tmp_path / "outside", url)
    before = tree_digest(indexed)
    ix = run_ix if (name, wrap) in REAL_CLI_ATTACKS else ix_in_process
    r = ix("query", "--lab", str(indexed), wrap + attacks(outside)[name])
    assert r.code == 2, r.output
    assert r.stdout == "" and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ix: error: SQL: "), r.stderr
    assert RULE in lines[0], lines[0]
    assert SECRET not in r.output and "root:" not in r.output
    assert seen == [] and outside.written() == []
    assert tree_digest(indexed) == before


def test_legitimate_queries_still_read_the_views(indexed, tmp_path):
    n = (indexed / "exp" / "results" / "trials.jsonl").read_bytes().count(b"\n")
    r = run_ix("query", "--lab", str(indexed), "--format", "json",
               "SELECT subject, count(*) AS n FROM trials GROUP BY subject")
    assert r.code == 0, r.output
    assert json.loads(r.stdout) == [{"subject": "target", "n": n}] and n >= 10
    r = ix_in_process("query", "--lab", str(indexed),
                      "EXPLAIN ANALYZE SELECT count(*) FROM trials JOIN cases USING (probe_id)")
    assert r.code == 0 and "analyzed_plan" in r.stdout, r.output
    out = tmp_path / "all.parquet"
    r = run_ix("results", "--lab", str(indexed), "--format", "csv")
    assert r.code == 0 and r.stdout.count("\n") == n + 1, r.output
    run_id = next((indexed / "exp" / "results" / "runs").iterdir()).name
    r = run_ix("export", run_id, "--lab", str(indexed), "--format", "parquet", "--out", str(out))
    assert r.code == 0, r.output
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}')").fetchall() == [(n,)]


def test_the_whole_matrix_is_refused_in_process_before_and_while_running(indexed, tmp_path,
                                                                          server):
    """Every attack and wrap: refused by the statement check when it is not a SELECT, and
    by the locked connection when it is (the second wall stands without the first)."""
    url, seen = server
    outside = Outside(tmp_path / "outside", url)
    for name, sql in attacks(outside).items():
        for wrap in WRAPS:
            query = wrap + sql
            try:
                check_read_only(query)
            except ConfigError as exc:
                assert RULE in exc.render(), (query, exc)
                checked = False
            else:
                checked = True
            if name in HARMLESS:
                assert not checked, query
                continue
            with connect(indexed) as con:  # the second wall, on its own
                try:
                    planned = con.execute(query).fetchall()
                except duckdb.Error as exc:
                    assert SECRET not in str(exc), query
                    if checked:  # a SELECT through the first wall: the lock names the rule
                        assert RULE in sql_error(exc).render(), (query, exc)
                    continue
            # no error: only a plan (EXPLAIN without ANALYZE runs nothing), and no file
            # was opened — the locked connection refuses any open
            assert wrap == "EXPLAIN ", query
            assert SECRET not in str(planned), query
    assert seen == [] and outside.written() == []


def test_the_mcp_tool_query_results_refuses_every_way_out(indexed, tmp_path, server):
    """The same attacks from the official MCP client, over `ix mcp`'s stdio."""
    pytest.importorskip("mcp")
    import os

    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from conftest import _ix_argv

    url, seen = server
    outside = Outside(tmp_path / "outside", url)
    before = tree_digest(indexed)
    argv = _ix_argv()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IX_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / ".no-user-config")
    params = StdioServerParameters(command=argv[0], args=[*argv[1:], "mcp", "--lab",
                                                          str(indexed)], env=env, cwd=tmp_path)
    async def main() -> None:
        with (tmp_path / "stderr.txt").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                with anyio.fail_after(300):
                    for name, sql in attacks(outside).items():
                        for wrap in WRAPS:
                            result = await session.call_tool("query_results",
                                                             {"sql": wrap + sql})
                            text = result.content[0].text  # type: ignore[union-attr]
                            assert SECRET not in text and "root:" not in text, (name, wrap)
                            if not result.is_error:  # a plan: EXPLAIN runs nothing, and the
                                assert wrap == "EXPLAIN ", (name, text)  # lock opens no file
                                continue
                            assert RULE in text, (name, wrap, text)
                            assert "\n" not in text.strip() and "Traceback" not in text
                    ok = await session.call_tool("query_results",
                                                 {"sql": "SELECT count(*) AS n FROM trials"})
                    assert not ok.is_error and ok.structured_content["rows"][0]["n"] > 0

    anyio.run(main)
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()
    assert seen == [] and outside.written() == []
    assert tree_digest(indexed) == before


def test_values_and_names_that_look_like_markup_print_as_text(indexed):
    """A value or a column named `[/x]` (a subject name, a setting's value) is text in the
    table, not Rich markup that ends the command in a traceback."""
    r = ix_in_process("query", "--lab", str(indexed), "SELECT '[/x]' AS \"[bold]col\", "
                      "subject || '[/red]' AS s FROM trials LIMIT 1")
    assert r.code == 0 and "Traceback" not in r.stderr, r.output
    assert "[/x]" in r.stdout and "[bold]col" in r.stdout and "target[/red]" in r.stdout
