"""A case's `variants:`: one case file, several prompts (the RFC's probe agents, by hand).

```yaml
---
id: must-001
expectation: must_trigger
variants:                      # a mapping of lists: every combination, in key order
  verb: [summarise, profile]
  file: [sales.csv, q3.tsv]
---
Can you {{ verb }} {{ file }} for me?
```

expands into `must-001~1` … `must-001~4`, each an ordinary case (same expectation, tags,
difficulty, history) whose prompt is the body rendered with one combination; a list of
mappings (`variants: [{file: a.csv}, {file: b.tsv}]`) gives one case per mapping. The
variables a variant was made from are kept in its `metadata` (`variant_of`, `variant`).

Rendered with jinja2's sandbox and a strict undefined: the body must use every variable
and no other, and no two variants may read the same, so a typo is an error naming the
file and `variants`, not a silent duplicate. The sandbox is bounded (`ix.eval.sandbox`,
`LIMITS`): a prompt, and any value its template makes, of at most a million characters,
calls nested at most 50 deep, 2 s to render all the variants of a case; past one, the case
is an error naming the file and `variants`, as is any other error of the template. Variants
of one case are one prompt reworded: the statistics treat them as one family, one unit of
every interval and comparison (`ix.eval.families`, docs/statistics.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ix._lazy import lazy
from ix.domain.errors import ConfigError
from ix.eval import sandbox

if TYPE_CHECKING:
    import jinja2
    from jinja2 import meta as jinja2_meta

    from ix.eval.models import EvalCase
else:  # only cases with variants pay for jinja2
    jinja2 = lazy("jinja2")
    jinja2_meta = lazy("jinja2.meta")

__all__ = ["LIMITS", "MAX_VARIANTS", "SEPARATOR", "expand_variants"]

#: Between a case's id and its variant's number: `must-001~3`.
SEPARATOR = "~"
#: The most variants one case may expand into.
MAX_VARIANTS = 1000
#: How far a case's template may go: a prompt (and any value the template makes) of at most
#: a million characters, calls nested 50 deep, 2 s to render every variant of the case.
LIMITS = sandbox.Limits(size=1_000_000, depth=50, seconds=2.0)

Variants = Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]]


@cache
def _env() -> jinja2.Environment:
    return sandbox.environment(LIMITS, immutable=True, undefined=jinja2.StrictUndefined,
                               autoescape=False, keep_trailing_newline=False)


def _combinations(variants: Variants, file: Path) -> list[dict[str, Any]]:
    if isinstance(variants, Mapping):
        keys = list(variants)
        for key in keys:
            values = variants[key]
            if isinstance(values, str | bytes) or not isinstance(values, Sequence) \
                    or not values:
                raise ConfigError(f"{key!r} must be a non-empty list of values", file=file,
                                  field=f"variants.{key}")
        count = 1
        for key in keys:
            count *= len(variants[key])
        if count > MAX_VARIANTS:
            raise ConfigError(f"makes {count:,} variants, more than {MAX_VARIANTS:,}; use a "
                              "list of mappings for the combinations you want", file=file,
                              field="variants")
        return [dict(zip(keys, combo, strict=True))
                for combo in itertools.product(*(variants[k] for k in keys))]
    combos = [dict(v) for v in variants]
    if len(combos) > MAX_VARIANTS:
        raise ConfigError(f"{len(combos):,} variants, more than {MAX_VARIANTS:,}", file=file,
                          field="variants")
    first = set(combos[0]) if combos else set()
    for i, combo in enumerate(combos):
        if set(combo) != first:
            raise ConfigError(f"variant {i + 1} sets {sorted(combo)}, the first sets "
                              f"{sorted(first)}: every variant sets the same variables",
                              file=file, field=f"variants[{i}]")
    return combos


def expand_variants(case: EvalCase, variants: Variants, file: Path) -> list[EvalCase]:
    """The cases `variants` makes of `case` (whose prompt is the template), numbered from 1."""
    if not variants:
        raise ConfigError("is empty; leave it out, or give the values to vary", file=file,
                          field="variants")
    combos = _combinations(variants, file)
    try:
        template = _env().from_string(case.prompt)
        used = jinja2_meta.find_undeclared_variables(_env().parse(case.prompt))
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"the prompt is not a valid template: {exc.message} (line "
                          f"{exc.lineno})", file=file, field="body") from None
    given = set(combos[0])
    if used - given:
        raise ConfigError(f"the prompt uses {', '.join(sorted(used - given))}, which "
                          f"variants does not set (it sets {', '.join(sorted(given))})",
                          file=file, field="variants")
    if given - used:
        raise ConfigError(f"sets {', '.join(sorted(given - used))}, which the prompt never "
                          "uses ({{ name }} puts a value in the prompt)", file=file,
                          field="variants")
    out: list[EvalCase] = []
    seen: dict[str, int] = {}
    with sandbox.budget(LIMITS.seconds):  # one deadline for all of the case's variants
        for i, combo in enumerate(combos, 1):
            prompt = _render(template, combo, i, file)
            if prompt in seen:
                raise ConfigError(f"variants {seen[prompt]} and {i} give the same prompt",
                                  file=file, field="variants")
            if not prompt:
                raise ConfigError(f"variant {i} renders an empty prompt", file=file,
                                  field="variants")
            seen[prompt] = i
            out.append(case.model_copy(update={
                "id": f"{case.id}{SEPARATOR}{i}", "prompt": prompt,
                "metadata": {**case.metadata, "variant_of": case.id, "variant": combo}}))
    return out


def _render(template: jinja2.Template, combo: dict[str, Any], i: int, file: Path) -> str:
    """Variant `i`'s prompt; whatever stops its template (an error of its own, or a limit of
    `LIMITS`) is a `ConfigError` naming the file and `variants`, never a traceback."""
    try:
        return template.render(**combo).strip()
    except jinja2.TemplateError as exc:
        why = str(exc)
    except (RecursionError, MemoryError) as exc:  # past what `LIMITS` foresaw
        why = f"{type(exc).__name__} (the template goes too deep or asks too much)"
    except Exception as exc:  # an operation on the values that fails: `{{ n / 0 }}`
        why = f"{type(exc).__name__}: {exc}"
    raise ConfigError(f"variant {i} does not render: {why}", file=file, field="variants")
