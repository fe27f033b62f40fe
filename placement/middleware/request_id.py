"""Every request's id: made here, seen by every later step, sent back.

The id (``req-<uuid4>``) goes into ``environ["openstack.request_id"]``,
where the context, the request log line and error bodies take it, and
into the ``x-openstack-request-id`` response header unless the response
already has one.  A caller's own id, sent as ``X-Openstack-Request-Id``
in that same form, is kept as the request's global id
(``environ["openstack.global_request_id"]``), which oslo.context puts in
the context and oslo.log in every line of the request, so that one action
can be followed across services.  Anything else sent there is ignored.

These are the names and forms of oslo.middleware's ``RequestId``, which
this replaces in the stack: that one is a webob filter, turning every
request and response into webob objects and back around the whole
application, about 4 % of a worker's CPU under the churn and claims
workloads (py-spy); here it is one closure around ``start_response``.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

from oslo_context import context as oslo_context

from placement.middleware.errors import REQUEST_ID_ENVIRON, REQUEST_ID_HEADER

GLOBAL_REQUEST_ID_ENVIRON = "openstack.global_request_id"
# The WSGI name of the inbound X-Openstack-Request-Id header.
_INBOUND = "HTTP_X_OPENSTACK_REQUEST_ID"
_ID_FORM = re.compile(r"req-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}")


class RequestId:
    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self.application = application

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        inbound = environ.get(_INBOUND)
        if inbound and _ID_FORM.fullmatch(inbound):
            environ[GLOBAL_REQUEST_ID_ENVIRON] = inbound
        request_id = oslo_context.generate_request_id()
        environ[REQUEST_ID_ENVIRON] = request_id

        def _start_response(status: str, headers: list[tuple[str, str]],
                            exc_info: Any = None) -> Any:
            if not any(name.lower() == REQUEST_ID_HEADER for name, _value in headers):
                headers = [*headers, (REQUEST_ID_HEADER, request_id)]
            return start_response(status, headers, exc_info)

        return self.application(environ, _start_response)
