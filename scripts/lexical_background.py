#!/usr/bin/env python
"""Build `src/ix/runtimes/lexical_background.tsv`: the lexical runtime's fixed word weights.

The `lexical` runtime weighs a word by how rare it is in ordinary English, not by how many of
a subject's skills use it, so that a subject's skills never change each other's scores. This
script makes those weights from the English word frequencies of `wordfreq` (Robyn Speer et
al., https://github.com/rspeer/wordfreq; data CC BY-SA 4.0, from Wikipedia, subtitles, books,
news, web text and more) and writes them next to the runtime. It runs once, by hand, when the
tokenizer or the formula changes; ix itself never needs `wordfreq`:

    .venv/bin/python -m pip install --target /tmp/wordfreq wordfreq==3.1.1
    PYTHONPATH=/tmp/wordfreq .venv/bin/python scripts/lexical_background.py

Formula (the Okapi IDF of a corpus of short documents, in the limit of a large corpus): a
document of L = 40 words contains a word of frequency f with probability p = 1 - exp(-L f)
(Poisson), and the word's weight is -ln p. Words of the same stem (ix's own `stem`) pool their
frequencies; stop words are left out, as the tokenizer drops them. Words rarer than one in a
million (Zipf 3), and words not listed at all, get the weight of a word at one in a million:
the file lists only the stems that weigh less than that.
"""

import math
import sys
from collections import defaultdict
from importlib.metadata import version
from pathlib import Path

from wordfreq import top_n_list, word_frequency  # type: ignore[import-not-found]

from ix.runtimes.lexical import BACKGROUND_DOC_WORDS, BACKGROUND_MIN_FREQUENCY, tokenize

OUT = Path(__file__).resolve().parent.parent / "src" / "ix" / "runtimes" / "lexical_background.tsv"


def weight(frequency: float) -> float:
    return -math.log(-math.expm1(-BACKGROUND_DOC_WORDS * frequency))


def main() -> int:
    pooled: dict[str, float] = defaultdict(float)
    for word in top_n_list("en", 1_000_000, wordlist="large"):
        if not (word.isascii() and word.isalnum()):
            continue
        frequency = word_frequency(word, "en", wordlist="large")
        if frequency < BACKGROUND_MIN_FREQUENCY / 10:
            break
        terms = tokenize(word)
        if len(terms) == 1:  # a stop word yields none
            pooled[terms[0]] += frequency
    floor = weight(BACKGROUND_MIN_FREQUENCY)
    rows = sorted(
        (term, round(weight(f), 3)) for term, f in pooled.items() if f > BACKGROUND_MIN_FREQUENCY
    )
    header = [
        "# ix lexical runtime: fixed word weights, -ln(1 - exp(-L f)) for a stem's English",
        f"# frequency f, L = {BACKGROUND_DOC_WORDS}; any other stem weighs {floor:.3f}.",
        "# Made by scripts/lexical_background.py from wordfreq "
        f"{version('wordfreq')} (https://github.com/rspeer/wordfreq),",
        "# whose data is CC BY-SA 4.0; this derived table is shared under the same licence.",
    ]
    OUT.write_text(
        "\n".join(header + [f"{t}\t{w}" for t, w in rows]) + "\n", encoding="utf-8"
    )
    print(f"{OUT}: {len(rows)} stems, floor {floor:.3f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
