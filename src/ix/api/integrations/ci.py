"""`ix ci init`: a CI workflow (GitHub Actions or GitLab CI) that installs ix, runs the lab (or
a battery) on a schedule, on pull requests and by hand, gates each experiment with
`ix report --baseline TAG` and keeps the HTML reports as an artifact (docs/scheduling.md).

This module plans it: what to install, run and gate, from the lab. Its text, and what a name
from the lab may hold to be put into it, are ix.api.integrations.ci_text's.
"""

import re
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ix._version import __version__
from ix.api.battery import plan_battery
from ix.api.integrations.ci_text import Gate, Platform, check_name, check_text, read_back, render
from ix.api.loading import resolve
from ix.api.loading import validate as plan_experiments
from ix.domain.errors import ConfigError
from ix.engine.plan import Plan
from ix.eval.sessions import EVERY
from ix.fs.files import write_text_atomic
from ix.fs.resolve import find_lab, select_experiments
from ix.runtimes.credentials import credentials
from ix.store.tags import is_tag_name, read_tags

PLATFORMS: tuple[Platform, ...] = ("github", "gitlab")
#: Where each platform reads its workflow, relative to the repository root.
OUTPUTS: dict[Platform, str] = {"github": ".github/workflows/ix.yml", "gitlab": ".gitlab-ci.yml"}
#: Daily at 03:17 UTC: off the top of the hour, when scheduled jobs queue longest.
DEFAULT_SCHEDULE = "17 3 * * *"
DEFAULT_BASELINE = "baseline-{experiment}"
DEFAULT_PYTHON = "3.11"
#: The ix-lab extra each runtime kind needs (the others need none).
EXTRAS = {"anthropic": "anthropic", "openai": "openai", "claude-code": "claude"}
_SECRET_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
_DISTRIBUTION = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")  # PEP 508
_VERSION = re.compile(r"[A-Za-z0-9.+!_-]+")

# (name, low, high, names): the five fields of a cron expression, as GitHub and GitLab read it
_CRON_FIELDS = (("minute", 0, 59, ()), ("hour", 0, 23, ()), ("day of month", 1, 31, ()),
                ("month", 1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug",
                                  "sep", "oct", "nov", "dec")),
                ("day of week", 0, 6, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")))


def check_cron(expr: str) -> str:
    """`expr` normalised to single spaces, or a ConfigError on `--schedule` saying which of
    the five fields is wrong. Macros (`@daily`) are refused: GitHub does not read them."""
    fields = expr.split()
    if expr.strip().startswith("@"):
        raise ConfigError(f"{expr.strip()!r}: GitHub reads no cron macros; write the 5 fields "
                          f"(e.g. {DEFAULT_SCHEDULE!r})", field="--schedule")
    if len(fields) != 5:
        raise ConfigError(f"a cron expression has 5 fields (minute hour day-of-month month "
                          f"day-of-week, e.g. {DEFAULT_SCHEDULE!r}), got {len(fields)} in "
                          f"{expr!r}", field="--schedule")
    for text, (name, low, high, names) in zip(fields, _CRON_FIELDS, strict=True):
        for part in text.split(","):
            if not _cron_part_ok(part.lower(), low, high, names):
                raise ConfigError(f"{name} field {text!r} of {expr!r}: each part must be *, "
                                  f"a number {low}-{high}"
                                  + (f" or a name ({names[0]}, ...)" if names else "")
                                  + ", a range a-b, or a step */n or a-b/n", field="--schedule")
    return " ".join(fields)


def _cron_part_ok(part: str, low: int, high: int, names: Sequence[str]) -> bool:
    base, _, step = part.partition("/")
    if step and not (step.isdigit() and 0 < int(step) <= high - low + 1):
        return False
    if base == "*":
        return True

    def value(word: str) -> int | None:
        if word in names:
            return names.index(word) + low
        return int(word) if word.isdigit() and low <= int(word) <= high else None

    ends = base.split("-")
    if len(ends) > 2 or any(value(e) is None for e in ends):
        return False
    return len(ends) == 1 or value(ends[0]) <= value(ends[1])  # type: ignore[operator]


@dataclass(frozen=True)
class Workflow:
    """A generated workflow: its text, the file it goes to (None: stdout), and what a user
    must do before it passes (`notes`)."""

    platform: Platform
    path: Path | None
    text: str
    root: Path
    lab: str
    command: str
    install: str
    schedule: str
    gates: tuple[Gate, ...]
    secrets: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())
    pr_comment: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"platform": self.platform, "path": None if self.path is None else str(self.path),
                "root": str(self.root), "lab": self.lab, "command": self.command,
                "install": self.install, "schedule": self.schedule,
                "gates": [{"experiment": g.experiment, "folder": g.folder, "tag": g.tag,
                           "tagged": g.tagged} for g in self.gates],
                "secrets": list(self.secrets), "notes": list(self.notes),
                "pr_comment": self.pr_comment}


def repository_root(path: Path) -> Path | None:
    """The root of the git checkout holding `path`, or None outside one (or without git)."""
    try:
        done = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(done.stdout.strip()).resolve() if done.returncode == 0 else None


def plan_workflow(lab: str | Path | None = None, *, platform: Platform = "github",
                  battery: Path | None = None, experiments: Sequence[str] = (),
                  schedule: str | None = None, baseline: str = DEFAULT_BASELINE,
                  python: str = DEFAULT_PYTHON, install: str | None = None,
                  extras: Sequence[str] = (), secrets: Sequence[str] = (),
                  timeout_minutes: int = 60, out: Path | None = None,
                  cwd: Path | None = None, pr_comment: bool = False) -> Workflow:
    """The workflow for the lab (every experiment, or `experiments`, or `battery`), its paths
    relative to the root of the git checkout holding the lab (else the working directory).
    Loads every experiment, so a lab that would fail in CI fails here first (exit 2).
    Each gate's first screen goes to the job's summary (GitHub) and the reports folder as
    Markdown; `pr_comment`: posted as one comment on the pull or merge request too.
    `schedule` None: every `sessions.every` of the experiments (a longitudinal study,
    `session_cron`), else `DEFAULT_SCHEDULE`."""
    cwd = (cwd or Path.cwd()).resolve()
    if platform not in PLATFORMS:
        raise ConfigError(f"unknown platform {platform!r}; allowed: github, gitlab",
                          field="--github/--gitlab")
    if schedule is not None:
        schedule = check_cron(schedule)
    if not re.fullmatch(r"3\.\d{1,2}", python):
        raise ConfigError(f"a Python version is 3.N (e.g. 3.11), got {python!r}",
                          field="--python")
    if not 1 <= timeout_minutes <= 4320:
        raise ConfigError(f"must be 1-4320 minutes, got {timeout_minutes}", field="--timeout")
    if battery is not None and experiments:
        raise ConfigError("a battery names its experiments: give --battery or experiments, "
                          "not both", field="--battery")
    if battery is not None:
        if not battery.is_file():
            raise ConfigError("no such battery file", file=battery, field="--battery")
        _, lab_path, plans = plan_battery(battery, None if lab is None
                                          else find_lab(lab, cwd=cwd))
    else:
        lab_path, chosen = resolve(lab, experiments, cwd=cwd)
        if not experiments:  # the whole lab, wherever in it `ix ci init` was run
            chosen = select_experiments(lab_path, (), cwd=lab_path)
        plans = plan_experiments(lab_path, [str(p) for p in chosen])
    if schedule is None:
        schedule = session_schedule(plans)
    root = repository_root(lab_path) or cwd
    lab_rel = check_name(_relative(lab_path, root, "--lab"), "--lab", "the lab's path")
    folders = list(dict.fromkeys(p.loaded.path.resolve() for p in plans))
    gates = _gates(folders, root, lab_path, baseline)
    names = _secrets(plans, secrets)
    if install is not None:
        check_text(install, "--install")
    requirement = install or _requirement(plans, extras)
    if battery is not None:
        where = check_name(_relative(battery.resolve(), root, "--battery"), "--battery",
                           "the battery's path")
        command = f"ix batch {_q(where)} --lab {_q(lab_rel)}"
    else:
        command = " ".join(["ix run --lab", _q(lab_rel),
                            *(_q(f.name) for f in folders if experiments)])
    install_line = f"python -m pip install {requirement}"
    text = render(platform, command=command, install=install_line, schedule=schedule,
                  python=python, gates=gates, secrets=names, timeout_minutes=timeout_minutes,
                  lab=lab_rel, pr_comment=pr_comment)
    read_back(platform, text, command=command, install=install_line, schedule=schedule,
              python=python, gates=gates, secrets=names, pr_comment=pr_comment)
    path = None if out is not None and str(out) == "-" else (
        cwd / out if out is not None else root / OUTPUTS[platform])
    return Workflow(platform, path, text, root, lab_rel, command, install_line, schedule,
                    gates, names, _notes(plans, gates, names, platform, pr_comment), pr_comment)


def session_cron(every: str) -> str:
    """The cron line that runs a session every `every` (`sessions.every`), at 17 past the
    hour: `17 */N * * *` for N hours dividing a day, `17 3 * * *` daily, `17 3 * * 1`
    weekly on Mondays. A period cron cannot repeat exactly (5h, 3d, 2w) is a ConfigError on
    `--schedule`: cron restarts its steps each day and month."""
    m = EVERY.fullmatch(every)
    n, unit = (int(m.group(1)), m.group(2)) if m else (0, "")
    if unit == "h" and 24 % n == 0 and n < 24:
        return "17 * * * *" if n == 1 else f"17 */{n} * * *"
    if (unit == "h" and n == 24) or (unit == "d" and n == 1):
        return DEFAULT_SCHEDULE
    if (unit == "d" and n == 7) or (unit == "w" and n == 1):
        return "17 3 * * 1"
    raise ConfigError(f"sessions every {every} have no cron line (cron repeats within a day, "
                      "daily or weekly): give --schedule, and let `ix report --sessions` say "
                      "when a session is due", field="--schedule")


def session_schedule(plans: Sequence[Plan]) -> str:
    """The schedule of the experiments' sessions (`session_cron`), the same for all that are
    longitudinal studies; `DEFAULT_SCHEDULE` when none is."""
    every = sorted({s.every for p in plans if (s := p.loaded.spec.sessions) is not None})
    if len(every) > 1:
        raise ConfigError(f"the experiments' sessions come every {' and every '.join(every)}: "
                          "one workflow runs on one schedule; give --schedule, or one "
                          "workflow per period (`ix ci init EXPERIMENT --out FILE`)",
                          field="--schedule")
    return session_cron(every[0]) if every else DEFAULT_SCHEDULE


def write_workflow(workflow: Workflow, *, force: bool = False) -> Path:
    """Write the workflow to its file; an existing file is refused unless `force`."""
    path = workflow.path
    if path is None:
        raise ConfigError("this workflow goes to stdout, not to a file", field="--out")
    if path.exists() and not force:
        raise ConfigError("already exists; pass --force to overwrite it", file=path,
                          field="--force")
    if path.exists() and not path.is_file():
        raise ConfigError("is not a file", file=path, field="--out")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, workflow.text, shared=True)
    return path


def _relative(path: Path, root: Path, option: str) -> str:
    try:
        rel = path.resolve().relative_to(root)
    except ValueError:
        raise ConfigError(f"{path} is outside the repository {root}: the workflow runs from "
                          "the repository root; run `ix ci init` inside it", field=option
                          ) from None
    return rel.as_posix() or "."


def _q(word: str) -> str:
    return shlex.quote(word)


def _gates(folders: Sequence[Path], root: Path, lab: Path, baseline: str) -> tuple[Gate, ...]:
    if len(folders) > 1 and "{experiment}" not in baseline:
        raise ConfigError(f"tag {baseline!r} would be the baseline of all {len(folders)} "
                          "experiments, but a tag names one run: put {experiment} in it "
                          "(e.g. baseline-{experiment})", field="--baseline")
    tags = read_tags(lab)
    gates = []
    for folder in folders:
        where = check_name(_relative(folder, root, "--lab"), "experiment",
                           "the experiment folder")
        tag = baseline.replace("{experiment}", folder.name)
        if not is_tag_name(tag):
            raise ConfigError(f"{tag!r} is not a tag name: it must start with a letter and "
                              "hold only letters, digits, '.', '_' and '-'", field="--baseline")
        tagged = tag in tags and (lab / tags[tag].folder).resolve().is_relative_to(folder)
        gates.append(Gate(folder.name, where, tag, tagged))
    return tuple(gates)


def _secrets(plans: Sequence[Plan], given: Sequence[str]) -> tuple[str, ...]:
    """The first credential variable of each subject's runtime, then the `--secret` names:
    references only (a name that is no variable name may be a pasted key: refused)."""
    for name in given:
        if not _SECRET_NAME.fullmatch(name) or name.startswith("GITHUB_"):
            raise ConfigError("give the NAME of a secret (upper-case letters, digits and _, "
                              "not GITHUB_...), never its value; the value given is not "
                              "shown", field="--secret")
    found = [credentials(sp.runtime_spec, env={}).env[:1] for p in plans for sp in p.subjects]
    return tuple(dict.fromkeys([*(n for names in found for n in names), *given]))


def _requirement(plans: Sequence[Plan], extras: Sequence[str]) -> str:
    """`ix-lab[extras]==version` for the lab's runtimes, and the plugins it uses."""
    needed = {EXTRAS[sp.runtime_spec["kind"]] for p in plans for sp in p.subjects
              if sp.runtime_spec.get("kind") in EXTRAS}
    for extra in extras:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", extra):
            raise ConfigError(f"{extra!r} is not an extra of ix-lab", field="--extra")
    chosen = sorted(needed | set(extras))
    pin = "" if "+" in __version__ else f"=={__version__}"
    words = [f"ix-lab{'[' + ','.join(chosen) + ']' if chosen else ''}{pin}"]
    plugins = {(pl.distribution, pl.version) for p in plans for pl in p.plugins
               if pl.distribution and pl.distribution != "ix-lab"}
    for dist, version in plugins:  # an installed package's metadata: checked like a name
        if not (_DISTRIBUTION.fullmatch(dist) and _VERSION.fullmatch(version or "0")):
            raise ConfigError(f"the plugin distribution {dist!r} {version!r} is not a "
                              "distribution name and version pip reads; give what to "
                              "install with --install", field="--install")
    words += [f"{d}=={v}" if v else d for d, v in sorted(plugins, key=lambda x: str(x))]
    return " ".join(_q(w) for w in words)


def _notes(plans: Sequence[Plan], gates: Sequence[Gate], secrets: Sequence[str],
           platform: Platform, pr_comment: bool = False) -> tuple[str, ...]:
    notes = []
    missing = [g.tag for g in gates if not g.tagged]
    if missing:
        notes.append("no run is tagged " + ", ".join(missing) + " yet: `ix tag RUN TAG` each "
                     "baseline (the gate exits 2 until the tag and its run are committed)")
    notes.append("commit the lab's tags.yaml and each tagged run's folder "
                 "(results/runs/RUN_ID): CI starts from a fresh checkout")
    if secrets:
        where = ("Settings > Secrets and variables > Actions" if platform == "github"
                 else "Settings > CI/CD > Variables (masked)")
        notes.append(f"set {', '.join(secrets)} in {where}")
    kinds = {sp.runtime_spec.get("kind") for p in plans for sp in p.subjects}
    if "human" in kinds:
        notes.append("a subject uses the human runtime, which waits for a person: "
                     "it cannot run unattended in CI")
    if "command" in kinds:
        notes.append("a subject uses the command runtime: its program must be installed on "
                     "the runner")
    if pr_comment and platform == "gitlab":
        notes.append("set IX_GITLAB_TOKEN in Settings > CI/CD > Variables (masked): a project "
                     "access token with the api scope, to write the merge request's note")
    if platform == "gitlab":
        notes.append("GitLab reads no schedule from the file: add a pipeline schedule "
                     "(Build > Pipeline schedules) with the cron line")
    return tuple(notes)
