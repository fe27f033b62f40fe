"""Building the WSGI application: configuration in, callable out.

``build_app(conf)`` connects the database, optionally migrates it, sets up
policy, and wraps the router in the middleware listed in ``_stack``.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

import sqlalchemy as sa
from oslo_config import cfg
from oslo_middleware import cors, http_proxy_to_wsgi

from placement import errors, policy
from placement.context import RequestContext
from placement.db import api as db_api
from placement.db import startup
from placement import kept as kept_store
from placement.kept import Kept
from placement.db.api import Database
from placement.middleware import (
    body_size,
    fault,
    microversion,
    noauth,
    request_id,
    request_log,
)
from placement.middleware.errors import VERSION_ENVIRON, error_response
from placement.handlers import allocation_candidate
from placement.objects import candidates
from placement.request import PlacementRequest
from placement import routes
from placement.policies import metrics as metrics_policy
from placement.rendering import allocation_candidates as candidates_rendering
from placement.routes import Router

LOG = logging.getLogger(__name__)
WSGIApp = Callable[..., Iterable[bytes]]


class PlacementApp:
    """The innermost application: context, dispatch, handler, errors."""

    def __init__(self, conf: cfg.ConfigOpts, db: Database, router: Router,
                 kept: Kept | None) -> None:
        self.conf = conf
        self.db = db
        self.router = router
        self.kept = kept

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        req = PlacementRequest(environ)
        req.version = environ[VERSION_ENVIRON]
        req.ctx = RequestContext.from_environ(environ, config=self.conf, db=self.db,
                                              kept=self.kept)
        environ[request_log.CONTEXT_ENVIRON] = req.ctx
        try:
            _check_content_headers(environ)
            req.check_query_text()
            route, handler, urlvars = self.router.resolve(
                environ, req.method, req.text_path, req.version)
            if route.checks_accept:
                _check_accept(req)
            req.urlvars = urlvars
            resp = _run(handler, req)
        except errors.ApiError as exc:
            resp = error_response(environ, exc)
        return resp(environ, start_response)


# A read whose database connection was lost (killed by the server, cut by
# a proxy or a failover) is run again on a fresh connection, at most this
# many times: it changed nothing, and a database that is really gone fails
# again at once (503).  Writes retry only their uncommitted transactions,
# in placement.db.retries.run_with_retries.
READ_RETRIES = 2
_READS = frozenset({"GET", "HEAD"})


def _run(handler: Callable[[PlacementRequest], Any], req: PlacementRequest) -> Any:
    lost = 0
    try:
        while True:
            try:
                return handler(req)
            except Exception as exc:
                if (req.method not in _READS or lost == READ_RETRIES
                        or db_api.classify(exc) is not db_api.Failure.UNAVAILABLE):
                    raise
                lost += 1
    finally:
        if lost:
            LOG.warning("%s %s lost its database connection and was run again "
                        "%d time(s)", req.method, req.text_path, lost)


def _check_content_headers(environ: dict[str, Any]) -> None:
    """400 for a body without a content type (or an unreadable length), for
    every request and before routing, as Placement does; whether the type
    is JSON is the business of the handlers that read a body (415)."""
    length = environ.get("CONTENT_LENGTH") or ""
    try:
        has_body = bool(length) and int(length) > 0
    except ValueError:
        raise errors.BadRequest("content-length header must be an integer",
                                vary=False) from None
    if has_body and not environ.get("CONTENT_TYPE"):
        raise errors.BadRequest("content-type header required when content-length > 0",
                                vary=False)


def _check_accept(req: PlacementRequest) -> None:
    """406 when a GET accepts only types other than JSON.

    Only reads are checked, as Placement does: a write answers with its own
    status whatever the Accept header says.
    """
    accept = req.headers.get("Accept")
    if req.method != "GET" or not accept or accept == "application/json":
        return
    if not req.accept.acceptable_offers(["application/json"]):
        raise errors.NotAcceptable("Only application/json is provided")


def _stack(conf: cfg.ConfigOpts, db: Database, router: Router,
           versioning: Callable[[WSGIApp], WSGIApp], kept: Kept | None) -> WSGIApp:
    """The middleware around the router, listed from the outside in.

    * fault: outermost, so nothing escapes as a traceback;
    * request_id: every later step, log line and error sees the same id;
    * http_proxy_to_wsgi (only with ``[oslo_middleware]
      enable_proxy_headers_parsing``): scheme, host, client address and
      prefix as the client saw them (``X-Forwarded-*``/``Forwarded``), so ``Location``
      and links are right behind a TLS-terminating proxy;
    * request_log: one line for every request, refused ones included;
    * metrics (``[metrics] enabled`` only): every request counted and
      timed, refused ones included, by route template;
    * cors: answers preflights before authentication, as browsers need;
      only when ``[cors] allowed_origin`` is set, as otherwise it would
      still turn every failed ``OPTIONS`` into a 200;
    * auth: keystonemiddleware's auth_token or noauth2 (``[api]
      auth_strategy``); public paths (the root) skip it.  Before the
      microversion, as in Placement: a 401 carries no version headers,
      and a request without a token is refused whatever version it asks;
    * microversion: negotiated before anything else reads the request;
    * body_size: refuses oversize bodies before anyone reads them
      (``[oslo_middleware] max_request_body_size``), as a JSON 413;
    * the application: context, routing, policy, handlers.

    ``router`` and ``versioning`` are the API's: Placement's by default,
    Ironic's for the bare-metal API (``placement/baremetal/app.py``).
    """
    app: WSGIApp = PlacementApp(conf, db, router, kept)
    app = body_size.BodySizeLimit(app, conf)
    app = versioning(app)
    is_public = _public_paths(conf, router)
    if conf.api.auth_strategy == "noauth2":
        app = noauth.NoAuthMiddleware(app, is_public)
    else:
        # Imported only here: keystonemiddleware is large, and noauth2
        # workers never use it.
        from placement.middleware import keystone

        app = keystone.authenticated(app, conf, is_public)
    conf.register_opts(cors.OPTS, group="cors")
    if conf.cors.allowed_origin:
        app = cors.CORS(app, conf)
    if conf.metrics.enabled:
        # Imported only here: prometheus-client costs every worker memory.
        from placement.middleware import metrics

        app = metrics.RequestMetrics(app, router.template)
    app = request_log.RequestLog(app)
    conf.register_opts(http_proxy_to_wsgi.OPTS, group="oslo_middleware")
    if conf.oslo_middleware.enable_proxy_headers_parsing:
        # It would do nothing else (and costs a signature inspection per
        # request even then).
        app = http_proxy_to_wsgi.HTTPProxyToWSGI(app, conf)
    app = request_id.RequestId(app)
    app = fault.FaultWrapper(app)
    return app


def _public_paths(conf: cfg.ConfigOpts, router: Router
                  ) -> Callable[[dict[str, Any]], bool]:
    """Which requests skip authentication: those of the router's public
    paths, and of the metrics routes while their policy rule lets anyone in
    (an operator's ``"@"``, for scrapers without a token; re-read with the
    policy file)."""

    def is_public(environ: dict[str, Any]) -> bool:
        if router.is_public(environ):
            return True
        return router.is_metrics(environ) and policy.anyone_may(
            conf, metrics_policy.VIEW)

    return is_public


def build_app(conf: cfg.ConfigOpts, db: Database | None = None,
              router: Router | None = None,
              versioning: Callable[[WSGIApp], WSGIApp] | None = None,
              kept: Kept | None = None) -> WSGIApp:
    """The placement WSGI application for this configuration (or, given
    another router and version negotiation, another API on the same
    configuration, database and policy).

    ``kept`` is what requests keep between them (:mod:`placement.kept`):
    by default this worker's store for the database, ``kept.NOTHING`` to
    keep nothing.
    """
    db = db or Database(conf)
    if conf.placement_database.sync_on_startup:
        startup.migrate(db)
    policy.init(conf)
    db.import_driver()
    if router is None:
        # Placement's API (the bare-metal one searches no candidates): the
        # search's SQL compiled before the first search rather than in it.
        candidates.prepare(db.compiling_dialect())
        allocation_candidate.prepare()
    return _stack(conf, db, router or Router(routes.for_config(conf)),
                  versioning or microversion.MicroversionMiddleware, kept)


def warm(conn: sa.engine.Connection) -> None:
    """What a worker of Placement's API runs on its first connection as it
    starts (``placement.wsgi.api``, see
    :func:`placement.db.startup.connect_in_background`): on a deployment
    small enough, every tree read into what the worker keeps
    (:func:`placement.objects.candidates.warm`) and the summaries of each
    written, so its first search finds them ready."""
    kept = kept_store.of(conn.engine)
    candidates_rendering.keep_tree_summaries(candidates.warm(conn, kept))
