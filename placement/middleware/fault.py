"""The outermost barrier: any uncaught exception becomes a JSON 500.

The client gets the request id and a generic message, the log gets the
traceback.  A database that cannot be reached becomes a 503, so that load
balancers and clients retry; the pool reconnects by itself once the
database is back (and an engine that could not be created is created on a
later request), so no restart is needed.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

from placement import errors
from placement.db.api import connection_problem
from placement.middleware.errors import error_response

LOG = logging.getLogger(__name__)


class FaultWrapper:
    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self.application = application

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        try:
            return self.application(environ, start_response)
        except errors.ApiError as exc:
            return error_response(environ, exc)(environ, start_response)
        except Exception as err:
            reason = connection_problem(err)
            if reason is not None:
                LOG.error("database unavailable: %s", reason)
                unavailable = errors.ServiceUnavailable(
                    "The placement database is unavailable; try again later."
                )
                return error_response(environ, unavailable)(environ, start_response)
            LOG.exception("unexpected error handling %s %s",
                          environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"))
            fault = errors.InternalServerError(
                "An unexpected error occurred: %s" % type(err).__name__
            )
            return error_response(environ, fault)(environ, start_response)
