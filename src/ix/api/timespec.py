"""`--since` / `--until` values: ISO dates and datetimes, or durations back from now (`7d`)."""

import re
from datetime import UTC, date, datetime, time, timedelta

from ix.domain.errors import ConfigError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

Moment = str | datetime | date | timedelta


def parse_moment(value: Moment, *, field: str, now: datetime | None = None,
                 end: bool = False) -> datetime:
    """The moment `value` names, as a naive UTC datetime (how the trials view stores time).

    A duration (`30s`, `30m`, `12h`, `7d`, `2w`, or a `timedelta`) counts back from `now`.
    A datetime without a zone is UTC. A bare date is its midnight (UTC); with `end` (for
    `--until`, whose bound is exclusive) the next midnight, so that the day is included.
    """
    now = now or datetime.now(UTC)
    if isinstance(value, timedelta):
        return _naive(now - value)
    if isinstance(value, datetime):
        return _naive(value)
    if isinstance(value, date):
        return _day(value, end)
    text = str(value).strip()
    found = _DURATION.match(text)
    if found:
        return _naive(now - timedelta(seconds=float(found[1]) * _UNITS[found[2]]))
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        try:
            return _day(date.fromisoformat(text), end)
        except ValueError:
            pass
    else:
        try:
            return _naive(datetime.fromisoformat(text))
        except ValueError:
            pass
    raise ConfigError(f"{text!r} is not a date, a datetime or a duration; use e.g. "
                      "2026-11-20, 2026-11-20T14:30, 2026-11-20T14:30:00Z, 7d, 12h or 30m",
                      field=field)


def _naive(moment: datetime) -> datetime:
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def _day(day: date, end: bool) -> datetime:
    midnight = datetime.combine(day, time())
    return midnight + timedelta(days=1) if end else midnight
