"""Names a user gives (subjects, cases, experiments): checked once at load, then safe anywhere.

A name ends up in file names (traces, artifacts), in reports and in the viewer, so it is
refused at load (a `ConfigError` naming the file and the field) when it could escape a folder
(`/`, `\\`, `..`, a leading dot), hide (control and invisible format characters, NUL), or
mislead (empty, whitespace-only, leading or trailing whitespace). A name is kept in Unicode
NFC, so `é` typed as one code point or as `e` + accent is one name. Within one experiment,
names that only a careful eye tells apart (`skeleton`: letter case, compatibility forms, and
common Cyrillic/Greek look-alikes of Latin letters) are refused as twins.

`file_part` turns a name into one file-name part, injectively: two different names never
share a trace or an artifact file.
"""

import hashlib
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from ix.domain.errors import ConfigError

#: Longest name (in characters) ix accepts: as long as a file name may be, since a case's
#: file name is its id (in file names ix writes, a long name is cut and hashed: `file_part`).
MAX_NAME = 255

#: Unicode categories never allowed in a name: control (NUL, newline, ESC, ...), format
#: (zero-width space, right-to-left override, ...), surrogate, line and paragraph separators.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})

#: Common look-alikes of Latin letters, after casefolding: the Cyrillic and Greek letters
#: whose capital is drawn like a Latin capital (`А`/`A`, `Ρ`/`P`), and a few lower-case
#: ones drawn like a Latin letter (`һ`, `ԁ`). Deliberately small; see `skeleton`.
_CONFUSABLES = str.maketrans({
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "һ": "h", "н": "h", "і": "i", "ј": "j", "к": "k", "ӏ": "l",
    "м": "m", "о": "o", "р": "p", "ԛ": "q", "с": "c", "ѕ": "s", "т": "t", "у": "y", "х": "x",
    "ԁ": "d", "ԝ": "w",
    # Greek
    "α": "a", "β": "b", "ε": "e", "ζ": "z", "η": "h", "ι": "i", "κ": "k", "μ": "m", "ν": "n",
    "ο": "o", "ρ": "p", "τ": "t", "υ": "y", "χ": "x",
    # Latin
    "ɡ": "g",
})


def normalise(name: str) -> str:
    """The form of a name ix keeps: Unicode NFC."""
    return unicodedata.normalize("NFC", name)


def name_problem(name: object) -> str | None:
    """Why `name` cannot be a name, or None when it can (it is checked in NFC)."""
    if not isinstance(name, str):
        return f"must be a string, not {type(name).__name__}"
    name = normalise(name)
    if not name:
        return "must not be empty"
    if not name.strip():
        return "must not be whitespace only"
    if name != name.strip():
        return "must not begin or end with whitespace"
    if len(name) > MAX_NAME:
        return f"is {len(name)} characters long; at most {MAX_NAME}"
    for ch in name:
        if ch in "/\\":
            return "must not hold path separators ('/' or '\\')"
        category = unicodedata.category(ch)
        if category in _HIDDEN:
            return (f"must not hold control characters or invisible ones (U+{ord(ch):04X}, "
                    f"category {category})")
    if name.startswith("."):
        return "must not have a leading dot (it would hide a file)"
    if ".." in name:
        return "must not hold '..'"
    return None


def check_name(name: object, *, what: str = "name", file: Path | str | None = None,
               field: str | None = None) -> str:
    """`name` in NFC, or a `ConfigError` naming `file` and `field` and saying what is wrong."""
    problem = name_problem(name)
    if problem is not None:
        raise ConfigError(f"invalid {what} {shown(name)}: {problem}", file=file, field=field)
    assert isinstance(name, str)
    return normalise(name)


def skeleton(name: str) -> str:
    """What a name looks like, roughly: NFKC, casefolded, common look-alikes mapped to the
    Latin letter they resemble. Two names with one skeleton are hard to tell apart."""
    return unicodedata.normalize("NFKC", name).casefold().translate(_CONFUSABLES)


def check_distinct(named: Iterable[tuple[str, str]], *, what: str = "name",
                   file: Path | str | None = None) -> None:
    """Refuse two of `(name, field)` that are one name (in NFC) or look alike (`skeleton`);
    the error names the second's field, and the first's in its message."""
    exact: dict[str, str] = {}
    looks: dict[str, tuple[str, str]] = {}
    for name, field in named:
        nfc = normalise(name)
        if nfc in exact:
            raise ConfigError(f"{what} {shown(name)} is listed twice (also at {exact[nfc]}; "
                              "names are compared in Unicode NFC)", file=file, field=field)
        exact[nfc] = field
        key = skeleton(nfc)
        if key in looks:
            other, where = looks[key]
            raise ConfigError(
                f"{what} {shown(name)} looks like {shown(other)} (at {where}): names that "
                "differ only in letter case, look-alike letters (Cyrillic or Greek for Latin) "
                "or Unicode compatibility forms cannot be told apart; rename one",
                file=file, field=field)
        looks[key] = (nfc, field)


#: Characters a file-name part keeps as they are; everything else is percent-encoded.
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
#: Longest part kept whole; a longer one is cut and given a hash of the whole name.
_MAX_PART = 120


def file_part(name: str) -> str:
    """`name` as one file-name part, injectively: ASCII letters, digits, `-`, `_` and `.`
    stay (a leading dot does not), every other character becomes `%XX` of its UTF-8 bytes,
    so `a b` is `a%20b` and never `a_b`. A part longer than 120 characters is cut and ends in
    `~` and 16 hex digits of the name's sha256 (`~` appears in no other part)."""
    if not name:
        raise ValueError("an empty name has no file name")
    name = normalise(name)
    out = []
    for i, ch in enumerate(name):
        if ch in _SAFE and not (i == 0 and ch == "."):
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8")))
    encoded = "".join(out)
    if len(encoded) <= _MAX_PART:
        return encoded
    cut = encoded[:_MAX_PART]
    if "%" in cut[-2:]:  # do not end on half an escape
        cut = cut[:cut.rindex("%")]
    return f"{cut}~{hashlib.sha256(name.encode('utf-8')).hexdigest()[:16]}"


def shown(name: object) -> str:
    """A name in a message: its repr (control characters escaped), cut short."""
    text = repr(name)
    return text if len(text) <= 80 else text[:77] + "..."
