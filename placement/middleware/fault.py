"""The outermost barrier: any uncaught exception becomes a JSON 500.

The client gets the request id and a generic message, the log gets the
traceback.  Database failures are answered by what they are
(:func:`placement.db.api.classify`):

* a database that cannot be reached becomes a 503, so that load balancers
  and clients retry; the pool reconnects by itself once the database is
  back (and an engine that could not be created is created on a later
  request), so no restart is needed;
* a write that still collided with concurrent ones after its retries (a
  deadlock, a Galera certification failure, a lock wait timeout) becomes a
  409 ``placement.concurrent_update``, which clients already retry: the
  database is healthy, so it is neither a 503 nor logged as an outage;
* anything else is a 500 like any other unexpected error.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

from placement import errors
from placement.db import api as db_api
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
            failure = db_api.classify(err)
            if failure is db_api.Failure.UNAVAILABLE:
                LOG.error("database unavailable: %s", db_api.driver_message(err))
                unavailable = errors.ServiceUnavailable(
                    "The placement database is unavailable; try again later."
                )
                return error_response(environ, unavailable)(environ, start_response)
            if failure is db_api.Failure.CONFLICT:
                LOG.info("%s %s collided with concurrent writes: %s",
                         environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"),
                         db_api.driver_message(err))
                conflict = errors.Conflict(
                    "Another request changed the same data at the same time; "
                    "please retry.", code=errors.CONCURRENT_UPDATE)
                return error_response(environ, conflict)(environ, start_response)
            LOG.exception("unexpected error handling %s %s",
                          environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"))
            fault = errors.InternalServerError(
                "An unexpected error occurred: %s" % type(err).__name__
            )
            return error_response(environ, fault)(environ, start_response)
