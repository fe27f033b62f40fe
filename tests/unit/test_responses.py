"""The Last-Modified header's date, checked against the standard library's
own HTTP date (email.utils) for the kinds of datetimes handlers pass."""

from __future__ import annotations

import datetime
import email.utils

import pytest

from placement import responses

UTC = datetime.timezone.utc


@pytest.mark.parametrize("moment", [
    # A naive datetime, as the database gives them, is UTC.
    datetime.datetime(2026, 12, 4, 21, 59, 59, 999999),
    datetime.datetime(2000, 2, 29, 0, 0, 0),
    datetime.datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
    # Another zone is shown in GMT.
    datetime.datetime(2026, 6, 30, 23, 30, 0, 500000,
                      tzinfo=datetime.timezone(datetime.timedelta(hours=-5))),
])
def test_http_date_is_the_standard_one(moment: datetime.datetime) -> None:
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    expected = email.utils.format_datetime(aware.astimezone(UTC), usegmt=True)
    assert responses._http_date(moment) == expected


def test_http_date_of_two_moments_in_one_second_is_one_text() -> None:
    first = datetime.datetime(2026, 12, 4, 22, 0, 0, 1, tzinfo=UTC)
    second = first.replace(microsecond=999999)
    later = first + datetime.timedelta(seconds=1)
    assert responses._http_date(first) == responses._http_date(second)
    assert responses._http_date(later) != responses._http_date(first)
