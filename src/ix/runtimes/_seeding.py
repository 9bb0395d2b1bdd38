"""One rule for every runtime that draws randomness: the trial seed and the attempt, mixed."""

import random


def trial_rng(seed: int, attempt: int) -> random.Random:
    """A generator private to one attempt of one trial (a retry is a new, reproducible draw)."""
    return random.Random((seed << 16) ^ attempt)
