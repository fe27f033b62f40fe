"""Building successful responses.

Every JSON body goes through :func:`json`, which also adds the caching
headers microversion 1.15 introduced: ``Cache-Control: no-cache`` and a
``Last-Modified`` taken from the newest timestamp of what is shown (or now,
when nothing shown has one).
"""

from __future__ import annotations

import datetime
import email.utils
import functools
import json as jsonlib
import math
from typing import TYPE_CHECKING, Any, Iterable

import webob

if TYPE_CHECKING:
    from placement.request import PlacementRequest

CACHE_HEADERS_SINCE = (1, 15)


def _http_date(moment: datetime.datetime) -> str:
    """``moment`` as an HTTP date (a naive one taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return _http_date_of(math.floor(moment.timestamp()))


@functools.lru_cache(maxsize=256)
def _http_date_of(seconds: int) -> str:
    # By the second, which is all an HTTP date shows: most responses show
    # "now", and formatting it afresh was a hundredth of a small request.
    # email.utils writes the English day and month names whatever the
    # process's locale (strftime's %a and %b would follow it).
    return email.utils.formatdate(seconds, usegmt=True)


def newest(stamps: Iterable[datetime.datetime | None]) -> datetime.datetime | None:
    """The latest of some ``updated_at or created_at`` values."""
    present = [stamp for stamp in stamps if stamp is not None]
    return max(present) if present else None


def dumps(data: Any) -> bytes:
    # The separators are json's defaults, as upstream's responses have them;
    # clients and benchmarks compare response sizes.
    return jsonlib.dumps(data).encode("utf-8")


def json(
    req: PlacementRequest,
    data: Any,
    *,
    status: int = 200,
    last_modified: datetime.datetime | None = None,
    location: str | None = None,
    body: bytes | list[bytes] | None = None,
) -> webob.Response:
    """A JSON response; ``body`` lets a caller pass pre-serialised bytes,
    or parts of them to send one after the other (large bodies are not
    copied once more to be joined)."""
    resp = webob.Response(status=status, charset=None)
    resp.content_type = "application/json"
    if isinstance(body, list):
        resp.app_iter = body
        resp.content_length = sum(len(part) for part in body)
    else:
        resp.body = body if body is not None else dumps(data)
    if req.version >= CACHE_HEADERS_SINCE:
        resp.headers["Cache-Control"] = "no-cache"
        resp.headers["Last-Modified"] = _http_date(
            last_modified or datetime.datetime.now(datetime.timezone.utc)
        )
    if location:
        resp.headers["Location"] = location
    return resp


def document(data: Any, *, status: int = 200, location: str | None = None
             ) -> webob.Response:
    """A JSON response without Placement's caching headers: the bare-metal
    API's answers, which Ironic sends with none."""
    resp = webob.Response(status=status, charset=None)
    resp.content_type = "application/json"
    resp.body = dumps(data)
    if location:
        resp.headers["Location"] = location
    return resp


def no_content() -> webob.Response:
    """204; with ``Content-Length: 0``, as Placement sends it."""
    resp = webob.Response(status=204, charset=None)
    del resp.content_type
    resp.content_length = 0
    return resp


def created(location: str) -> webob.Response:
    """201 with a ``Location`` and no body (creation before 1.20 and the like)."""
    resp = webob.Response(status=201, charset=None)
    del resp.content_type
    resp.content_length = 0
    resp.headers["Location"] = location
    return resp
