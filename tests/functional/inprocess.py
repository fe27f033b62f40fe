"""The whole application in-process on a fresh database, for tests that
drive it from several threads at once (the race tests)."""

from __future__ import annotations

import contextlib
import json
from typing import Any, Iterator

import webob
from oslo_config import cfg

from placement import app
from placement.db import migration
from placement.db.api import Database
from tests import backends
from tests.functional import fixtures


@contextlib.contextmanager
def migrated(backend: str) -> Iterator[tuple[cfg.ConfigOpts, Database]]:
    """A migrated fresh database on ``backend``: its configuration
    (noauth2) and Database, to build applications on."""
    backends.require(backend)
    with backends.fresh_database(backend) as url:
        conf = fixtures.make_conf(url)
        db = Database(conf)
        try:
            migration.upgrade(db)
            yield conf, db
        finally:
            db.dispose()


@contextlib.contextmanager
def served(backend: str) -> Iterator[tuple[Any, Database]]:
    """A migrated database on ``backend``, the app serving it (noauth2) and
    the app's Database, for tests that also look below the API."""
    with migrated(backend) as (conf, db):
        yield app.build_app(conf, db), db


@contextlib.contextmanager
def application(backend: str) -> Iterator[Any]:
    """A migrated database on ``backend`` and the app serving it (noauth2)."""
    with served(backend) as (application, _db):
        yield application


def send(application: Any, method: str, path: str, body: Any = None,
         version: str = "latest") -> webob.Response:
    """One request as the admin, with a JSON body when one is given."""
    req = webob.Request.blank(path, method=method)
    req.headers["X-Auth-Token"] = "admin"
    req.headers["Accept"] = "application/json"
    req.headers["OpenStack-API-Version"] = "placement " + version
    if body is not None:
        req.content_type = "application/json"
        req.body = json.dumps(body).encode()
    return req.get_response(application)
