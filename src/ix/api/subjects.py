"""The subject registry: list, add and test named subjects (`ix subjects ...`)."""

import asyncio
import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ix.domain.errors import ConfigError
from ix.domain.redaction import Redactor, environment_secrets
from ix.domain.secrets import check_no_secrets, is_secret_key, looks_like_secret, reads_env_template
from ix.domain.types import Subject
from ix.engine.redactor import runtime_secrets, spec_secrets
from ix.eval.models import EvalCase
from ix.fs.resolve import find_lab
from ix.fs.yamlio import parse_yaml
from ix.lab import subjects as registry
from ix.lab.loader import resolve_skill
from ix.lab.subjects import RegisteredSubject
from ix.runtimes import RuntimeContext, get_kind, validate_options

if TYPE_CHECKING:
    from ix.api.schemas import RegistrySubject, SubjectAdded, SubjectsListOutput

TEST_PROMPT = "Reply with OK."
TEST_CASE_ID = "ix-subjects-test"
ANSWER_CHARS = 200


def subjects_file() -> Path:
    """Where the user's subjects live: `$XDG_CONFIG_HOME/ix/subjects.yaml`."""
    return registry.subjects_path()


def list_subjects() -> list[RegisteredSubject]:
    """Built-in profiles and the user's subjects (which override built-ins of the same name)."""
    return list(registry.load_registry(subjects_file()).values())


def registry_entry(subject: RegisteredSubject) -> "RegistrySubject":
    """A subject of the registry as `ix subjects list --json` prints it."""
    spec = subject.spec
    return {"name": subject.name, "source": subject.source, "description": spec.description,
            "runtime": dict(spec.runtime), "model": spec.model, "skills": list(spec.skills),
            "config": dict(spec.config)}


def registry_listing(subjects: Sequence[RegisteredSubject]) -> "SubjectsListOutput":
    """`ix subjects list --json`: where your subjects live, and every subject."""
    return {"file": str(subjects_file()), "subjects": [registry_entry(s) for s in subjects]}


def added_entry(subject: RegisteredSubject, replaced: bool) -> "SubjectAdded":
    """`ix subjects add --json`: the subject as listed, and whether it replaced yours."""
    return {**registry_entry(subject), "replaced": replaced}


def get_subject(name: str) -> RegisteredSubject:
    known = registry.load_registry(subjects_file())
    if name not in known:
        raise ConfigError(f"unknown subject {name!r}; known: {', '.join(known)}", field="NAME")
    return known[name]


def parse_options(items: Sequence[str]) -> dict[str, Any]:
    """`key=value` pairs; each value is read as YAML (`0.5` a number, `[a, b]` a list)."""
    options: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"expected key=value, got {item!r}", field="--option")
        if is_secret_key(key) and not reads_env_template(raw):
            raise ConfigError("looks like a secret; ix never stores API keys or tokens: put "
                              "the key in an environment variable and pass its name with "
                              "--api-key-env", field=f"--option {key}")
        if looks_like_secret(raw):
            raise ConfigError("the value looks like an API key or token; ix never stores "
                              "secrets: put it in an environment variable and pass its name "
                              "with --api-key-env", field=f"--option {key}")
        if key in options:
            raise ConfigError("given twice", field=f"--option {key}")
        try:
            options[key] = parse_yaml(raw, file="--option") if raw.strip() else ""
        except ConfigError:  # not YAML (e.g. a template, `{{ env.TOKEN }}`): the text itself
            options[key] = raw
    return options


def add_subject(name: str, runtime: str, *, model: str | None = None,
                description: str | None = None, options: Sequence[str] | Mapping[str, Any] = (),
                api_key_env: str | None = None,
                skills: Sequence[str] = ()) -> RegisteredSubject:
    """Add (or replace) a subject of the user's `subjects.yaml`; nothing is written on error.

    `runtime` must be an available kind and the options valid for it; no option may be, or
    look like, a secret: an API key is given by the name of its environment variable.
    """
    registry.check_name(name, field="NAME")
    opts = dict(options) if isinstance(options, Mapping) else parse_options(options)
    try:
        check_no_secrets(opts)
    except ConfigError as exc:
        raise ConfigError(exc.message, field=f"--option {exc.field}") from None
    if api_key_env is not None:
        if looks_like_secret(api_key_env):
            raise ConfigError("give the name of the environment variable that holds the key "
                              "(e.g. ANTHROPIC_API_KEY), never the key itself",
                              field="--api-key-env")
        opts["api_key_env"] = api_key_env
    for key in ("kind", "model"):
        if key in opts:
            raise ConfigError(f"use --{'runtime' if key == 'kind' else key} for {key!r}",
                              field=f"--option {key}")
    try:
        get_kind(runtime)
    except ConfigError as exc:
        raise ConfigError(exc.message, field="--runtime") from None
    spec: dict[str, Any] = {"kind": runtime, **opts}
    if model is not None:
        spec["model"] = model
    try:
        validate_options(spec)
    except ConfigError as exc:
        where = (exc.field or "").removeprefix("runtime")
        option = where.lstrip(".").split(".")[0].split("[")[0]
        flag = "--model" if option == "model" else f"--option {option}" if option else "--option"
        raise ConfigError(f"{exc.message} (runtime {runtime})", field=flag) from None
    entry: dict[str, Any] = {
        "description": description or "",
        "runtime": {"kind": runtime, **opts},
        "model": model,
        "skills": list(skills),
    }
    return registry.add_subject(name, entry, subjects_file())


@dataclass(frozen=True)
class SubjectTest:
    """One tiny request to a subject: its answer or its error, and how long it took."""

    name: str
    runtime: str
    model: str | None
    ok: bool
    latency_ms: float
    answer: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, str] | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "runtime": self.runtime, "model": self.model, "ok": self.ok,
                "latency_ms": round(self.latency_ms, 1), "answer": self.answer,
                "tool_calls": self.tool_calls, "error": self.error, "notes": self.notes}


def run_subject_test(name: str, *, timeout_s: float = 60.0,
                 lab: str | Path | None = None) -> SubjectTest:
    """Build the subject's runtime and send it one case, "Reply with OK.", within `timeout_s`.

    Bad input (an unknown subject, invalid options) raises `ConfigError`; a runtime that
    cannot start or a failed request is a `SubjectTest` with `ok=False` and the error.
    """
    if not timeout_s > 0:
        raise ConfigError(f"must be > 0, got {timeout_s:g}", field="--timeout")
    entry = get_subject(name)
    spec = entry.runtime_spec()
    where = entry.source if not entry.builtin else None
    try:
        kind, options = validate_options(spec)
    except ConfigError as exc:
        raise ConfigError(exc.message, file=where,
                          field=f"{name}.{exc.field or 'runtime'}") from None
    skills, notes = _skills(entry, lab)
    subject = Subject(name=name, description=entry.spec.description,
                      config={"runtime": spec, "model": entry.spec.model, "skills": skills,
                              "profile": name, "profile_source": entry.source})
    case = EvalCase(id=TEST_CASE_ID, prompt=TEST_PROMPT, expectation="must_trigger")

    def failed(kind_: str, message: str, t0: float) -> SubjectTest:
        return SubjectTest(name, entry.kind, entry.spec.model, False,
                           (time.perf_counter() - t0) * 1000,
                           error={"kind": kind_, "message": message}, notes=notes)

    t0 = time.perf_counter()
    try:
        runtime = kind.build(options, RuntimeContext(target_skill=None))
    except ConfigError as exc:  # e.g. a CLI that is not installed: the subject cannot run
        return failed("unavailable", exc.render(), t0)
    # what the subject answers is printed: every secret it could echo is taken out
    redactor = Redactor([*environment_secrets(os.environ), *spec_secrets(spec, os.environ),
                         *runtime_secrets(runtime, os.environ)])
    t0 = time.perf_counter()
    try:
        observation = redactor.tree(asyncio.run(_invoke(runtime, subject, case, timeout_s)))
    except TimeoutError:
        return failed("timeout", f"no answer within {timeout_s:g} s", t0)
    except Exception as exc:  # the subject's failure is the answer to "does it work?"
        kind_ = getattr(exc, "kind", None) or type(exc).__name__
        return failed(str(kind_), redactor.text(getattr(exc, "message", None) or str(exc)), t0)
    latency_ms = (time.perf_counter() - t0) * 1000
    content = str(getattr(observation, "content", "") or "")
    calls = [c.model_dump() if hasattr(c, "model_dump") else dict(c)
             for c in getattr(observation, "tool_calls", ()) or ()]
    return SubjectTest(name, entry.kind, entry.spec.model, True, latency_ms,
                       answer=content[:ANSWER_CHARS], tool_calls=calls, notes=notes)


async def _invoke(runtime: Any, subject: Subject, case: EvalCase, timeout_s: float) -> Any:
    try:
        return await asyncio.wait_for(runtime.invoke(subject, case, seed=0, attempt=0),
                                      timeout_s)
    finally:
        close = getattr(runtime, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()


def _skills(entry: RegisteredSubject, lab: str | Path | None) -> tuple[list[dict[str, str]],
                                                                       list[str]]:
    """The subject's skills, resolved as an experiment of the lab would; unresolved: a note."""
    if not entry.spec.skills:
        return [], []
    lab_path: Path | None
    if lab is not None:
        lab_path = find_lab(lab)
    else:
        try:
            lab_path = find_lab(None)
        except ConfigError:
            lab_path = None
    base = Path(entry.source).parent if not entry.builtin else Path.cwd()
    file = Path(entry.source) if not entry.builtin else Path("built-in")
    skills, notes = [], []
    for j, ref in enumerate(entry.spec.skills):
        try:
            skills.append(resolve_skill(ref, base, lab_path or base, file,
                                        f"{entry.name}.skills[{j}]"))
        except ConfigError as exc:
            notes.append(f"skill {ref!r} left out: {exc.message}"
                         + ("" if lab_path else " (no lab here; pass --lab)"))
    return skills, notes
