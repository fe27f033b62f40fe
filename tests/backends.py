"""The database backends tests run on, and throwaway databases on them.

``PLACEMENT_TEST_DB_URLS`` (space separated) names server URLs; by default
SQLite plus the local PostgreSQL and MariaDB/MySQL that CI provides.  A
server that cannot be reached is skipped on a developer machine but fails
the run in CI (``CI`` set), where every backend must be tested.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
import uuid
from typing import Iterator

import pytest
import sqlalchemy as sa

from placement.db.api import Database

DEFAULT_URLS = {
    "sqlite": "sqlite://",
    "postgresql": "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres",
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/?charset=utf8mb4",
}


def server_url(name: str) -> str:
    for url in os.environ.get("PLACEMENT_TEST_DB_URLS", "").split():
        if sa.engine.make_url(url).get_backend_name() == name:
            return url
    return DEFAULT_URLS[name]


@functools.cache
def unreachable(name: str) -> str | None:
    """Why the backend cannot be used, or None when it can."""
    if name == "sqlite":
        return None
    engine = sa.create_engine(server_url(name))
    try:
        with engine.connect():
            return None
    except Exception as exc:  # any failure to connect means "not here"
        return str(exc).splitlines()[0]
    finally:
        engine.dispose()


def require(name: str) -> None:
    """Skip (or, in CI, fail) when the backend is not reachable."""
    reason = unreachable(name)
    if reason is None:
        return
    message = "%s is not reachable: %s" % (name, reason)
    if os.environ.get("CI"):
        pytest.fail(message + " (CI must test every backend)")
    pytest.skip(message)


@contextlib.contextmanager
def fresh_database(name: str) -> Iterator[str]:
    """Create an empty database on backend ``name``; yield its URL; drop it."""
    if name == "sqlite":
        with tempfile.TemporaryDirectory(prefix="placement-test-") as tmp:
            yield "sqlite:///" + os.path.join(tmp, "placement.sqlite")
        return
    db_name = "placement_test_" + uuid.uuid4().hex[:12]
    server = sa.engine.make_url(server_url(name))
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            if name == "mysql":
                conn.exec_driver_sql(
                    "CREATE DATABASE %s CHARACTER SET utf8mb4 "
                    "COLLATE utf8mb4_bin" % db_name)
            else:
                conn.exec_driver_sql("CREATE DATABASE %s" % db_name)
        yield server.set(database=db_name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            if name == "postgresql":
                conn.exec_driver_sql(
                    "DROP DATABASE IF EXISTS %s WITH (FORCE)" % db_name)
            else:
                conn.exec_driver_sql("DROP DATABASE IF EXISTS %s" % db_name)
        admin.dispose()


@contextlib.contextmanager
def fresh_db(name: str) -> Iterator[Database]:
    """A :class:`Database` on an empty database of backend ``name``
    (required: skipped, or failed in CI, when unreachable); disposed and
    dropped after."""
    from tests.functional.fixtures import make_conf

    require(name)
    with fresh_database(name) as url:
        db = Database(make_conf(url))
        try:
            yield db
        finally:
            db.dispose()
