"""Negotiates the microversion before anything else reads the request.

The version is stored in the environ for the handlers and the error
formatter.  Every response that gets this far (not a 401: authentication
comes first, as in Placement) carries the ``OpenStack-API-Version``
header, and all but the errors Placement raises outside its handlers (see
:class:`placement.errors.ApiError`) ``Vary``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from placement import errors, microversion
from placement.middleware.errors import VERSION_ENVIRON, error_response


class MicroversionMiddleware:
    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self.application = application

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        # The one header negotiation reads, rather than a copy of them all.
        value = environ.get(microversion.HEADER_ENVIRON)
        headers = {} if value is None else {microversion.HEADER: value}
        try:
            version = microversion.negotiate(headers)
        except errors.ApiError as exc:
            return error_response(environ, exc)(environ, start_response)
        environ[VERSION_ENVIRON] = version
        extra = list(microversion.response_headers(version).items())

        def _start_response(status: str, headers: list[tuple[str, str]],
                            exc_info: Any = None) -> Any:
            # Errors set their own version headers (some without Vary, see
            # errors.ApiError); other responses get them here.
            names = {name.lower() for name, _ in headers}
            if microversion.RESPONSE_HEADER not in names:
                headers = list(headers) + extra
            return start_response(status, headers, exc_info)

        return self.application(environ, _start_response)
