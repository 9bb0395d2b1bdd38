"""One rule for every runtime that draws randomness: the trial seed and the attempt, mixed.

A trial's draws depend on (seed, attempt) only, so the same trial reproduces exactly and a
retry (attempt + 1) is a new, equally reproducible draw. The trial seed is common to every
subject (DESIGN.md §2, common random numbers): two subjects that decide alike on the same
draw show only what differs between them. A runtime that needs a stream of its own per
subject (or per choice) derives it from the trial seed and a name (`own_stream`).
"""

import hashlib
import random
from functools import lru_cache

_MASK = (1 << 64) - 1


def trial_rng(seed: int, attempt: int) -> random.Random:
    """A generator private to one attempt of one trial, for runtimes that draw a lot."""
    return random.Random((seed << 16) ^ attempt)


def uniform(seed: int, attempt: int, index: int) -> float:
    """The `index`-th uniform draw in [0, 1) of one attempt of one trial (SplitMix64).

    A few arithmetic operations instead of seeding a Mersenne Twister: for runtimes that need
    one or two draws per trial on the hot path.
    """
    z = (seed + attempt * 0xD1B54A32D192ED03 + (index + 1) * 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    z ^= z >> 31
    return (z >> 11) * (1.0 / (1 << 53))


@lru_cache(maxsize=4096)
def name_index(name: str) -> int:
    """A 64-bit number of `name`: the `index` of `uniform` for a stream of that name's own
    (far from the small indices runtimes use for their fixed draws)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big")


def own_stream(seed: int, name: str) -> int:
    """A seed of `name`'s own derived from the trial seed: independent draws per subject
    where common ones would harm (a retry's jitter: two subjects' retries apart in time)."""
    z = (seed ^ (name_index(name) * 0x9E3779B97F4A7C15)) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return (z ^ (z >> 31)) >> 1
