"""A plugin package pip-installed into a fresh virtual environment, then used by that
environment's `ix`: its runtime and sensor run an experiment, `ix plugins` lists it, and the
run's `spec.yaml` records its distribution and version. No network: the package is a wheel
made on disk, installed with `--no-index`."""

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from conftest import case, write
from ix.fs.yamlio import load_yaml_file


def fresh_venv(folder: Path) -> tuple[Path, Path]:
    """A venv without pip that sees this one's packages (ix, pydantic, ...) through a `.pth`
    file (`--system-site-packages` would show the base interpreter's, not this venv's): its
    python and its own site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True,
                   capture_output=True, timeout=60)
    python = folder / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"], check=True,
                          capture_output=True, text=True, timeout=60).stdout.strip()
    parent = sysconfig.get_paths()["purelib"]
    Path(site, "_ix_parent.pth").write_text(f"import site; site.addsitedir({parent!r})\n")
    return python, Path(site)


def run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IX_", "VIRTUAL_ENV"))}
    env.update({"XDG_CONFIG_HOME": str(cwd / ".no-user-config"), "NO_COLOR": "1",
                "COLUMNS": "200"})
    return subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_pip_installed_plugin_runs_is_listed_and_lands_in_the_spec(tmp_path, echo_wheel):
    package = echo_wheel(tmp_path / "dist", "1.0.2")
    python, site = fresh_venv(tmp_path / "venv")
    installed = run(Path(sys.executable), "-m", "pip", "--python", str(python), "install",
                    "--no-index", "--no-deps", "--no-cache-dir", "--disable-pip-version-check",
                    "--quiet", str(package), cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (site / "ix_echo_plugin-1.0.2.dist-info" / "entry_points.txt").is_file()

    listed = run(python, "-m", "ix", "plugins", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = [(p["group"], p["name"], p["distribution"], p["version"], p["target"])
            for p in json.loads(listed.stdout)["plugins"]]
    assert rows == [
        ("runtime", "echo", "ix-echo-plugin", "1.0.2", "ix_echo_plugin:EchoRuntime"),
        ("sensor", "contains", "ix-echo-plugin", "1.0.2", "ix_echo_plugin:ContainsSensor"),
        ("probe", "numbered", "ix-echo-plugin", "1.0.2", "ix_echo_plugin:NumberedProbe"),
    ]

    lab = tmp_path / "lab"
    exp = lab / "exp"
    write(exp / "experiment.yaml", """
        name: exp
        trials: 2
        runtime: {kind: echo, reply: "you said"}
        sensor: {kind: contains, word: please}
    """)
    case(exp, "must-001", "must_trigger", "please help")
    case(exp, "not-001", "should_not_trigger", "go away")
    ran = run(python, "-m", "ix", "run", "--lab", str(lab), "exp", "--json", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    trials = [json.loads(line) for line in
              (exp / "results" / "trials.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(trials) == 4 and not any(t["error"] for t in trials)
    passed = {t["probe_id"]: t["reading"]["passed"] for t in trials}
    assert passed == {"must-001": True, "not-001": False}
    spec = load_yaml_file(exp / "results" / "runs" / summary["run_id"] / "spec.yaml")
    assert spec["versions"]["plugins"] == [
        {"group": "runtime", "name": "echo", "distribution": "ix-echo-plugin",
         "version": "1.0.2"},
        {"group": "sensor", "name": "contains", "distribution": "ix-echo-plugin",
         "version": "1.0.2"},
    ]
