"""Request metrics: the one place every request is measured.

Counts each request by route template (``/resource_providers/{uuid}``,
never the uuid itself, so the series stay few; ``unknown`` for a URL of no
route), method, negotiated microversion (``none`` when none was: a 401, a
failed negotiation) and status; observes its duration and its database
time per route template.  It sits beside the request log, outside
authentication and negotiation, so refused requests are counted too; a
request whose application raised is counted with the status the fault
barrier answers (``fault.answer_for``).  After each request it also
reports what the worker's kept store counted (:mod:`placement.kept`).

Installed only with ``[metrics] enabled``.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable

from placement import microversion
from placement.db import observe
from placement.metrics import instruments
from placement.middleware import fault
from placement.middleware.errors import VERSION_ENVIRON
from placement.middleware.request_log import CONTEXT_ENVIRON

WSGIApp = Callable[..., Iterable[bytes]]
UNKNOWN_ROUTE = "unknown"
NO_VERSION = "none"


class RequestMetrics:
    def __init__(self, application: WSGIApp,
                 template_of: Callable[[dict[str, Any]], str | None]) -> None:
        self.application = application
        self.template_of = template_of

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        started = time.perf_counter()
        status = ""

        def _start_response(line: str, headers: list[tuple[str, str]],
                            exc_info: Any = None) -> Any:
            nonlocal status
            status = line.split(None, 1)[0]
            return start_response(line, headers, exc_info)

        with observe.measuring() as db_time:
            try:
                return self.application(environ, _start_response)
            except Exception as err:
                status = str(fault.answer_for(err).status)
                raise
            finally:
                self._record(environ, status, time.perf_counter() - started,
                             db_time[0])

    def _record(self, environ: dict[str, Any], status: str, seconds: float,
                db_seconds: float) -> None:
        # The router's match, made by an inner layer when one routed.
        route = self.template_of(environ) or UNKNOWN_ROUTE
        version = environ.get(VERSION_ENVIRON)
        instruments.request_done(
            route, environ.get("REQUEST_METHOD", ""),
            microversion.format_version(version) if version else NO_VERSION,
            status or "500", seconds, db_seconds)
        ctx = environ.get(CONTEXT_ENVIRON)
        kept = getattr(ctx, "kept_if_used", None)
        if kept is not None:
            instruments.kept_counted(id(kept), list(kept.counts.items()))
