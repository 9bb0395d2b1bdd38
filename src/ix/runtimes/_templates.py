"""Templates in runtime options (`command`, `http`): `{{ prompt }}`, `{{ case.id }}`, ...

Rendered with jinja2's `SandboxedEnvironment` (a template cannot reach Python internals),
bounded (`ix.eval.sandbox`, `LIMITS`), and a strict undefined: a variable that does not
exist, or a template that goes past a limit (a value or an output of more than 64 million
characters, calls nested more than 50 deep, more than 2 s to render), fails the trial with
error kind `template_error`; it never renders as an empty string, nor stops the run. A
template that does not parse (or nests too deep to compile) is a configuration error, found
when the run is planned.

Variables (DESIGN.md §2):

- `prompt`: the case's prompt;
- `history`: the turns before the prompt (DESIGN.md §7), as JSON text: a list of
  `{"role", "content", "tool_calls": [{"name", "input", "result"}]}`; `[]` without one;
- `case`: `id`, `prompt`, `expectation`, `rationale`, `tags` (a list), `difficulty`, `metadata`,
  `history` (the same turns as a list, to loop over);
- `subject`: `name`, `description`, `model`;
- `seed`: the trial's seed (DESIGN.md §2), an integer: a program that draws at random can
  draw from it, so that the same trial reproduces;
- `workspace`: the folder the trial runs in, when its case has one (DESIGN.md §10);
- `env`: the environment variables, only where a runtime allows them (`env.NAME`).
"""

import functools
import json
import os
import re
from collections.abc import Iterable, Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator

from ix._lazy import lazy
from ix.domain.errors import TrialError
from ix.domain.workspace import current_workspace
from ix.eval import sandbox

if TYPE_CHECKING:
    import jinja2
    from jinja2 import nodes as jinja2_nodes
    from jinja2 import utils as jinja2_utils
else:  # imported on first use: only experiments with templates pay for jinja2
    jinja2 = lazy("jinja2")
    jinja2_nodes = lazy("jinja2.nodes")
    jinja2_utils = lazy("jinja2.utils")

#: How far one option's template may go when a trial renders it: a case file may hold 16 MiB
#: and a `context:` prefix as much again, so a template may print both twice over; calls
#: nested 50 deep; 2 s.
LIMITS = sandbox.Limits(size=64_000_000, depth=50, seconds=2.0)


class _Namespace(dict[str, Any]):
    """A read-only-by-convention mapping whose missing keys name where they were looked for."""

    __slots__ = ("label",)

    def __init__(self, label: str, items: Mapping[str, Any]):
        super().__init__(items)
        self.label = label


class _Environ:
    """`env.NAME`: one environment variable, read when the template renders; not iterable."""

    __slots__ = ()

    def __getitem__(self, name: str) -> str:
        return os.environ[name]

    def __repr__(self) -> str:
        return "<environment>"

    __str__ = __repr__


@functools.cache
def _jinja() -> SimpleNamespace:
    """The sandboxed environment and its error types, made on first use."""
    missing = jinja2_utils.missing

    class Undefined(jinja2.StrictUndefined):
        """StrictUndefined with messages that name the variable the user wrote."""

        __slots__ = ()

        @property
        def _undefined_message(self) -> str:
            obj, name = self._undefined_obj, self._undefined_name
            if self._undefined_hint is None and obj is not missing:
                if isinstance(obj, _Environ):
                    return f"environment variable {name!r} is not set"
                if isinstance(obj, _Namespace):
                    keys = ", ".join(sorted(obj)) or "none"
                    return f"{obj.label} has no key {name!r} (keys: {keys})"
            return str(super()._undefined_message)

    env = sandbox.environment(LIMITS, undefined=Undefined, autoescape=False,
                              keep_trailing_newline=True)
    return SimpleNamespace(env=env, Undefined=Undefined, TemplateError=jinja2.TemplateError,
                           TemplateSyntaxError=jinja2.TemplateSyntaxError)


def check(source: str) -> None:
    """Raise `ValueError` (for an options validator) when `source` does not parse, or
    does not compile (nested too deep)."""
    if "{" not in source:
        return
    j = _jinja()
    try:
        j.env.from_string(source)
    except j.TemplateSyntaxError as exc:
        raise ValueError(f"template error: {exc.message} (line {exc.lineno})") from None


def _checked(source: str) -> str:
    check(source)
    return source


#: An option that is a template: checked (parsed) when the options are validated.
TemplateStr = Annotated[str, AfterValidator(_checked)]


class Template:
    """One option's template, compiled once; `render` raises `TrialError('template_error')`."""

    __slots__ = ("_literal", "_template", "source", "where")

    def __init__(self, source: str, where: str):
        self.where = where
        self.source = source
        # Most argv items are plain words: no need to run jinja for them.
        if "{" not in source:
            self._literal: str | None = source
            self._template: Any = None
        else:
            self._literal = None
            self._template = _jinja().env.from_string(source)

    def render(self, context: Mapping[str, Any]) -> str:
        if self._literal is not None:
            return self._literal
        assert self._template is not None
        try:
            return str(self._template.render(context))
        except _jinja().TemplateError as exc:
            raise TrialError("template_error", f"{self.where}: {exc.message or exc}") from None
        except Exception as exc:  # e.g. a filter given a value it cannot handle
            raise TrialError("template_error",
                             f"{self.where}: {type(exc).__name__}: {exc}") from None


def compile_tree(value: Any, where: str) -> Any:
    """Strings anywhere in a JSON-like value become `Template`s; other leaves stay as they are."""
    if isinstance(value, str):
        return Template(value, where)
    if isinstance(value, Mapping):
        return {k: compile_tree(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [compile_tree(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def templates_in(value: Any) -> list[Template]:
    """Every `Template` in a value `compile_tree` made."""
    if isinstance(value, Template):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in templates_in(v)]
    if isinstance(value, list):
        return [t for v in value for t in templates_in(v)]
    return []


def reads_history(templates: Iterable[Template]) -> bool:
    """Whether any of `templates` uses `history` or `case.history`: a runtime whose templates
    do not would drop a case's history (the plan refuses it then)."""
    for t in templates:
        if "{" not in t.source:
            continue
        tree = _jinja().env.parse(t.source)
        if any(n.name == "history" for n in tree.find_all(jinja2_nodes.Name)) or any(
                n.attr == "history" and isinstance(n.node, jinja2_nodes.Name)
                and n.node.name == "case" for n in tree.find_all(jinja2_nodes.Getattr)):
            return True
    return False


def render_tree(value: Any, context: Mapping[str, Any]) -> Any:
    """The value `compile_tree` made, rendered: keys are kept literally."""
    if isinstance(value, Template):
        return value.render(context)
    if isinstance(value, dict):
        return {k: render_tree(v, context) for k, v in value.items()}
    if isinstance(value, list):
        return [render_tree(v, context) for v in value]
    return value


def check_tree(value: Any, where: str = "") -> None:
    """`check` every string in a JSON-like value; the message names the string's place."""
    if isinstance(value, str):
        try:
            check(value)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}" if where else str(exc)) from None
    elif isinstance(value, Mapping):
        for k, v in value.items():
            check_tree(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            check_tree(v, f"{where}[{i}]")


def _namespace(label: str, value: Any) -> Any:
    if isinstance(value, Mapping):
        return _Namespace(label, {str(k): _namespace(f"{label}.{k}", v)
                                  for k, v in value.items()})
    return value


def context(subject: Any, stimulus: Any, *,
            env_hint: str = "environment variables are not available here",
            seed: int = 0, attempt: int = 0) -> dict[str, Any]:
    """The variables of one trial's templates, without `env` (see `with_env`): `attempt`
    counts a trial's retries, and a judge's repeats."""
    workspace = current_workspace()
    prompt = getattr(stimulus, "prompt", stimulus if isinstance(stimulus, str) else "")
    turns = [t.model_dump(mode="json") for t in getattr(stimulus, "history", ()) or ()]
    case = _Namespace("case", {
        "id": getattr(stimulus, "id", ""),
        "prompt": prompt,
        "expectation": getattr(stimulus, "expectation", ""),
        "rationale": getattr(stimulus, "rationale", ""),
        "tags": list(getattr(stimulus, "tags", ()) or ()),
        "difficulty": getattr(stimulus, "difficulty", None),
        "metadata": _namespace("case.metadata", getattr(stimulus, "metadata", None) or {}),
        "history": turns,
    })
    config = getattr(subject, "config", None) or {}
    subj = _Namespace("subject", {
        "name": getattr(subject, "name", ""),
        "description": getattr(subject, "description", ""),
        "model": config.get("model") if isinstance(config, Mapping) else None,
    })
    return {
        "prompt": prompt,
        "history": json.dumps(turns, ensure_ascii=False),
        "case": case,
        "subject": subj,
        "env": _jinja().Undefined(hint=env_hint, name="env"),
        "seed": seed,
        "attempt": attempt,
        "workspace": str(workspace) if workspace is not None else _jinja().Undefined(
            hint="this case has no workspace (workspace: in experiment.yaml, or files: in "
                 "the case)", name="workspace"),
    }


_ENV_USE = re.compile(r"\benv\.([A-Za-z_][A-Za-z0-9_]*)|\benv\[\s*['\"]([^'\"]+)['\"]\s*\]")


def env_names(source: str) -> list[str]:
    """The environment variables a template reads (`{{ env.NAME }}`, `env['NAME']`): their
    values are secrets, to redact from what a request's answer or error echoes back."""
    return [a or b for a, b in _ENV_USE.findall(source)]


def with_env(ctx: Mapping[str, Any]) -> dict[str, Any]:
    """The same variables plus `env.NAME`, for the options that may use the environment."""
    return {**ctx, "env": _Environ()}
