"""Ensembles in a plan: each `ensemble` subject given its members (`ix.runtimes.ensemble`),
and each member's runtime shared between its own trials and the ensembles that ask it.

Planning refuses what an ensemble cannot combine (exit 2, naming the file and the field):
a member that is not a subject of this run, an ensemble as a member, and cases whose answers
are more than an observation (files in a workspace, a conversation with a simulated user).
"""

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ix.domain.errors import ConfigError, raise_all
from ix.eval.models import EvalCase
from ix.runtimes.ensemble import EnsembleRuntime, Member, Shared

KIND = "ensemble"


def bind_ensembles(plans: Sequence[Any], cases: Sequence[EvalCase],
                   listed: Sequence[str]) -> list[Any]:
    """`plans` (SubjectPlans) with each ensemble bound to its members; `listed`: every
    subject of the experiment, to tell a member left out by `--subject` from a typo."""
    ensembles = [p for p in plans if p.runtime_spec.get("kind") == KIND]
    if not ensembles:
        return list(plans)
    by_name = {p.subject.name: p for p in plans}
    problems: list[ConfigError] = []
    uses: Counter[str] = Counter()
    for e in ensembles:
        file, field = _origin(e, "members")
        for j, name in enumerate(e.runtime.options.members):
            member = by_name.get(name)
            if member is None:
                why = (f"subject {name!r} is not in this run: add `--subject {name}`"
                       if name in listed else
                       f"no subject {name!r} in the experiment (subjects: "
                       f"{', '.join(listed)})")
                problems.append(ConfigError(why, file=file, field=f"{field}[{j}]"))
            elif member.runtime_spec.get("kind") == KIND:
                problems.append(ConfigError(f"{name!r} is an ensemble; a member must be a "
                                            "subject that answers itself", file=file,
                                            field=f"{field}[{j}]"))
            else:
                uses[name] += 1
        busy = next((c for c in cases if c.workspace is not None or c.user is not None), None)
        if busy is not None:
            what = "files (a workspace)" if busy.workspace is not None else "a simulated user"
            file, field = _origin(e, "kind")
            problems.append(ConfigError(
                f"case {busy.id!r} has {what}: an ensemble combines answers, not the files "
                "or conversations behind them; run its members as subjects", file=file,
                field=field))
    raise_all(problems)
    shared = {name: Shared(by_name[name].runtime, 1 + n) for name, n in uses.items()}
    bound = []
    for p in plans:
        if p.subject.name in shared:
            p = replace(p, runtime=shared[p.subject.name])
        elif p.runtime_spec.get("kind") == KIND:
            members = [by_name[n] for n in p.runtime.options.members]
            runtime: EnsembleRuntime = p.runtime
            runtime.bind([Member(m.subject, shared[m.subject.name], m.sensors)
                          for m in members])
            # read as its first member reads, and no more in flight than its members allow
            p = replace(p, sensors=members[0].sensors, target_skill=members[0].target_skill,
                        limit=min(m.limit or p.limit for m in members) or p.limit)
        bound.append(p)
    return bound


def _origin(plan: Any, option: str) -> tuple[str | None, str]:
    """Where the ensemble's `option` was written: (file, field)."""
    origins = plan.subject.config.get("runtime_origins") or {}
    file, field = origins.get(option) or origins.get("kind") or [None, "ensemble"]
    return file, field
