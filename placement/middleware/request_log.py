"""One log line per request, written when the response starts.

``<remote> "<METHOD> <path>?<query>" status: <code> len: <bytes>
microversion: <X.Y>``, logged with the request's context so that the user,
project and request id appear through oslo.log's context format.  Headers
(tokens!) and bodies are never logged.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

from placement import microversion
from placement.middleware.errors import VERSION_ENVIRON

LOG = logging.getLogger("placement.requestlog")
CONTEXT_ENVIRON = "placement.context"


class RequestLog:
    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self.application = application

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        def _start_response(status: str, headers: list[tuple[str, str]],
                            exc_info: Any = None) -> Any:
            length = next((value for name, value in headers
                           if name.lower() == "content-length"), "-")
            self._log(environ, status, length)
            return start_response(status, headers, exc_info)

        return self.application(environ, _start_response)

    @staticmethod
    def _log(environ: dict[str, Any], status: str, length: str) -> None:
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
            extra={"context": environ.get(CONTEXT_ENVIRON)} if environ.get(
                CONTEXT_ENVIRON) else None,
        )
