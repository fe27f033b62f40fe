"""The outermost barrier: any uncaught exception becomes a JSON 500.

The client gets the request id and a generic message, the log gets the
traceback.  A database that cannot be reached becomes a 503, so that load
balancers and clients retry; the engine reconnects by itself once the
database is back.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

from oslo_db import exception as db_exc

from placement import errors
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
        except db_exc.DBConnectionError:
            LOG.exception("database unavailable")
            exc = errors.ServiceUnavailable(
                "The placement database is unavailable; try again later."
            )
            return error_response(environ, exc)(environ, start_response)
        except Exception as err:
            LOG.exception("unexpected error handling %s %s",
                          environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"))
            exc = errors.InternalServerError(
                "An unexpected error occurred: %s" % type(err).__name__
            )
            return error_response(environ, exc)(environ, start_response)
