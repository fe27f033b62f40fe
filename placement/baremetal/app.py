"""Building the bare-metal API's WSGI application.

The same stack as the Placement API's (``placement/app.py``: fault
barrier, request ids, proxy headers, request log, CORS, body size limit,
keystone or noauth2, context and policy) on the same configuration and
database, with Ironic's route table, version negotiation and error body.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from oslo_config import cfg

from placement import app
from placement.baremetal import faults, microversion, routes
from placement.db.api import Database
from placement.middleware.errors import RENDERER_ENVIRON

WSGIApp = Callable[..., Iterable[bytes]]


class IronicErrors:
    """Outermost: every error below, wherever raised, is answered in
    Ironic's format with the version headers."""

    def __init__(self, application: WSGIApp) -> None:
        self.application = application

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        environ[RENDERER_ENVIRON] = faults.error_response
        return self.application(environ, start_response)


def build_app(conf: cfg.ConfigOpts, db: Database | None = None) -> WSGIApp:
    """The bare-metal WSGI application for this configuration."""
    return IronicErrors(app.build_app(
        conf, db, router=routes.Router(), versioning=microversion.VersionMiddleware))
