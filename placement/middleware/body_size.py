"""Refuse request bodies larger than ``[oslo_middleware] max_request_body_size``.

The option and the counting reader are oslo.middleware's ``sizelimit``; the
difference is the answer, a placement JSON error (413) like every other
error rather than webob's page.  A declared ``Content-Length`` over the
limit is refused before anything reads the body; a body without one
(chunked, which the WSGI server marks with ``wsgi.input_terminated``) is
counted as the handler reads it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import webob.exc
from oslo_config import cfg
from oslo_middleware import sizelimit

from placement import errors
from placement.middleware.errors import error_response

WSGIApp = Callable[..., Iterable[bytes]]


class BodySizeLimit:
    def __init__(self, application: WSGIApp, conf: cfg.ConfigOpts) -> None:
        self.application = application
        conf.register_opts(sizelimit.OPTS, group="oslo_middleware")
        self.limit: int = conf.oslo_middleware.max_request_body_size

    def _too_large(self, environ: dict[str, Any], start_response: Callable[..., Any]
                   ) -> Iterable[bytes]:
        exc = errors.RequestEntityTooLarge(
            "Request is too large. Larger than max_request_body_size (%d)."
            % self.limit)
        return error_response(environ, exc)(environ, start_response)

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        length = environ.get("CONTENT_LENGTH")
        if length:
            try:
                declared = int(length)
            except ValueError:
                declared = None
            if declared is not None and declared > self.limit:
                return self._too_large(environ, start_response)
        elif environ.get("wsgi.input_terminated") or environ.get(
                "HTTP_TRANSFER_ENCODING", "").lower() == "chunked":
            # No declared length, but the server says the input ends (a
            # chunked body): count what the handler reads.
            environ["wsgi.input"] = sizelimit.LimitingReader(
                environ["wsgi.input"], self.limit)
        try:
            return self.application(environ, start_response)
        except webob.exc.HTTPRequestEntityTooLarge:
            # Raised by the LimitingReader while a handler read the body.
            return self._too_large(environ, start_response)
