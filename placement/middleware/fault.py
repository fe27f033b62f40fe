"""The outermost barrier: any uncaught exception becomes a JSON 500.

The client gets the request id and a generic message, the log gets the
traceback.  Database failures are answered by what they are
(:func:`placement.db.failures.classify`):

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


def answer_for(err: Exception) -> errors.ApiError:
    """The error a client gets for an exception that reached the barrier."""
    if isinstance(err, errors.ApiError):
        return err
    failure = db_api.classify(err)
    if failure is db_api.Failure.UNAVAILABLE:
        return errors.ServiceUnavailable(
            "The placement database is unavailable; try again later.")
    if failure is db_api.Failure.CONFLICT:
        return errors.Conflict(
            "Another request changed the same data at the same time; "
            "please retry.", code=errors.CONCURRENT_UPDATE)
    return errors.InternalServerError(
        "An unexpected error occurred: %s" % type(err).__name__)


class FaultWrapper:
    def __init__(self, application: Callable[..., Iterable[bytes]]) -> None:
        self.application = application

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        try:
            return self.application(environ, start_response)
        except Exception as err:
            answer = answer_for(err)
            if answer is not err:
                _log(environ, err, answer)
            return error_response(environ, answer)(environ, start_response)


def _log(environ: dict[str, Any], err: Exception, answer: errors.ApiError) -> None:
    """Log an exception turned into ``answer`` as what it is: an outage, a
    collision the database resolved, or a fault with its traceback."""
    request = "%s %s" % (environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"))
    if isinstance(answer, errors.ServiceUnavailable):
        LOG.error("database unavailable: %s", db_api.driver_message(err))
    elif isinstance(answer, errors.Conflict):
        LOG.info("%s collided with concurrent writes: %s", request,
                 db_api.driver_message(err))
    else:
        LOG.exception("unexpected error handling %s", request)
