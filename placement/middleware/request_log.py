"""One log line per request, written when the response starts.

``<remote> "<METHOD> <path>?<query>" status: <code> len: <bytes>
microversion: <X.Y>`` at INFO on the ``placement.requestlog`` logger, as
OpenStack Placement writes it.  The record carries the request's context,
so oslo.log's context format adds the request id, user and project.  A
request refused before the application built a context (401, 413, a failed
negotiation, a CORS preflight) is logged with a context holding only the
request id, never with whatever context the thread saw last.  A request
whose application raised is logged before the exception goes on to the
fault barrier, with the status the barrier answers (``fault.answer_for``):
503 for a database that cannot be reached, 409 for a write that kept
colliding, 500 for anything else.

Headers (tokens!) and bodies are never logged.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

from oslo_context import context as oslo_context

from placement import microversion
from placement.middleware import fault
from placement.middleware.errors import REQUEST_ID_ENVIRON, VERSION_ENVIRON

LOG = logging.getLogger("placement.requestlog")
CONTEXT_ENVIRON = "placement.context"


class RequestLog:
    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self.application = application

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        logged = False

        def _start_response(status: str, headers: list[tuple[str, str]],
                            exc_info: Any = None) -> Any:
            nonlocal logged
            length = next((value for name, value in headers
                           if name.lower() == "content-length"), "-")
            if not logged:
                self._log(environ, status, length)
                logged = True
            return start_response(status, headers, exc_info)

        try:
            return self.application(environ, _start_response)
        except Exception as err:
            if not logged:
                answer = fault.answer_for(err)
                self._log(environ, "%d %s" % (answer.status, answer.title), "-")
            raise

    @staticmethod
    def _context(environ: dict[str, Any]) -> oslo_context.RequestContext:
        ctx = environ.get(CONTEXT_ENVIRON)
        if ctx is None:
            # overwrite=False: don't become the thread's current context.
            ctx = oslo_context.RequestContext(
                request_id=environ.get(REQUEST_ID_ENVIRON), overwrite=False)
        return ctx

    @classmethod
    def _log(cls, environ: dict[str, Any], status: str, length: str) -> None:
        if not LOG.isEnabledFor(logging.INFO):
            return
        path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
        if environ.get("QUERY_STRING"):
            path += "?" + environ["QUERY_STRING"]
        version = environ.get(VERSION_ENVIRON)
        LOG.info(
            '%(remote)s "%(method)s %(path)s" status: %(status)s len: %(length)s '
            "microversion: %(version)s",
            {
                "remote": environ.get("REMOTE_ADDR", "-"),
                "method": environ.get("REQUEST_METHOD"),
                "path": path,
                "status": status.split(None, 1)[0],
                "length": length,
                "version": microversion.format_version(version) if version else "-",
            },
            extra={"context": cls._context(environ)},
        )
