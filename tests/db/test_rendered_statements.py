"""``db.api.run_rendered`` gives the rows ``Connection.execute`` gives, for
any number of values of each list parameter, on every backend; it leaves
to SQLAlchemy the statements whose parameters need converting (SQLite's
datetimes), and its
errors are the ones oslo.db raises for any statement.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest
import sqlalchemy as sa
from oslo_db import exception as db_exc

from placement.db import api as db_api
from placement.db import tables
from placement.db.api import Database
from tests.db import statements

_RP = tables.resource_providers
_NOW = statements.NOW


@pytest.fixture(scope="module", params=["sqlite", "postgresql", "mysql"])
def db(request: pytest.FixtureRequest) -> Iterator[Database]:
    with statements.five_providers(request.param) as database:
        yield database


# Rows by ids and names (two list parameters), with a constant the
# statement holds and a plain parameter.
_BY_IDS_AND_NAMES = (
    sa.select(sa.literal(7, sa.Integer), _RP.c.id, _RP.c.name)
    .where(_RP.c.id.in_(sa.bindparam("ids", expanding=True))
           | _RP.c.name.in_(sa.bindparam("names", expanding=True)),
           _RP.c.generation >= sa.bindparam("least"))
    .order_by(_RP.c.id))


def _rows(result: Any) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in result]


@pytest.mark.parametrize("params", [
    {"ids": [1, 2], "names": ["rp5"], "least": 0},
    {"ids": [3], "names": ["rp1", "rp2", "nobody"], "least": 2},
    {"ids": [], "names": [], "least": 0},
    {"ids": [1, 2], "names": ["rp4"], "least": 2},  # same lengths, other values
    {"least": 1, "names": ["rp3"], "ids": [4, 5]},  # another order
    {"ids": list(range(1, 200)), "names": ["rp1"], "least": 3},  # left to SQLAlchemy
])
def test_rows_are_those_sqlalchemy_gives(db: Database, params: dict[str, Any]) -> None:
    with db.reader() as conn:
        expected = _rows(conn.execute(_BY_IDS_AND_NAMES, params))
        assert _rows(db_api.run_rendered(conn, _BY_IDS_AND_NAMES, params)) == expected
        # Again, from what was rendered the first time.
        assert _rows(db_api.run_rendered(conn, _BY_IDS_AND_NAMES, params)) == expected
        # As plain tuples from the driver's cursor, more than once (on
        # PostgreSQL the repeats run prepared).
        for _ in range(3):
            assert db_api.rendered_rows(conn, _BY_IDS_AND_NAMES, params) == expected


def test_a_datetime_parameter_finds_its_rows(db: Database) -> None:
    statement = (sa.select(_RP.c.id).where(_RP.c.created_at == sa.bindparam(
        "stamp", type_=sa.DateTime)).order_by(_RP.c.id))
    with db.reader() as conn:
        rows = _rows(db_api.run_rendered(conn, statement, {"stamp": _NOW}))
    assert rows == [(1,), (2,), (3,), (4,), (5,)]


def test_errors_are_those_of_oslo_db(db: Database) -> None:
    statement = _RP.insert().values(
        uuid=sa.bindparam("uuid"), name=sa.bindparam("name"), generation=0)
    with pytest.raises(db_exc.DBDuplicateEntry):
        with db.writer() as conn:
            db_api.run_rendered(conn, statement, {
                "uuid": "00000000-0000-0000-0000-000000000001", "name": "again"})


def test_raw_rows_errors_are_those_of_oslo_db(db: Database) -> None:
    statement = _RP.insert().values(
        uuid=sa.bindparam("uuid"), name=sa.bindparam("name"), generation=0
    ).returning(_RP.c.id)
    for _ in range(3):  # the first time, and (PostgreSQL) prepared
        with pytest.raises(db_exc.DBDuplicateEntry):
            with db.writer() as conn:
                db_api.rendered_rows(conn, statement, {
                    "uuid": "00000000-0000-0000-0000-000000000001", "name": "again"})
    wrong = "SELECT no_such_column FROM resource_providers"
    with pytest.raises(Exception) as through_sqlalchemy:
        with db.reader() as conn:
            conn.exec_driver_sql(wrong)
    with pytest.raises(Exception) as raw:
        with db.reader() as conn:
            db_api.raw_rows(conn, wrong)
    assert type(raw.value) is type(through_sqlalchemy.value)
    assert "no_such_column" in str(raw.value)
    with db.reader() as conn:  # the connections still serve
        assert len(db_api.raw_rows(conn, "SELECT id FROM resource_providers")) == 5


class _Shouted(sa.types.TypeDecorator[str]):
    """A string SQLAlchemy converts on the way in."""

    impl = sa.String
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        return None if value is None else value.upper()


def _by_array(item_type: Any) -> Any:
    from sqlalchemy.dialects import postgresql

    return (sa.select(_RP.c.id, _RP.c.name)
            .where(sa.or_(
                _RP.c.id == sa.any_(sa.bindparam("ids", type_=postgresql.ARRAY(sa.Integer))),
                _RP.c.name == sa.any_(sa.bindparam("names",
                                                   type_=postgresql.ARRAY(item_type)))))
            .order_by(_RP.c.id))


def test_plain_array_parameters_are_rendered() -> None:
    # A claim's one statement on PostgreSQL passes its rows as arrays of
    # ids and names: the driver takes those lists as they are.
    statement = _by_array(sa.String)
    params = {"ids": [1, 2], "names": ["rp4", "nobody"]}
    with statements.five_providers("postgresql") as db, db.reader() as conn:
        expected = _rows(conn.execute(statement, params))
        assert expected == [(1, "rp1"), (2, "rp2"), (4, "rp4")]
        assert db_api._rendered(conn, statement, params) is not None
        for _ in range(3):
            assert db_api.rendered_rows(conn, statement, params) == expected
        # Items SQLAlchemy converts (and a tuple, which it would make a
        # list) leave the statement to SQLAlchemy, which converts them.
        shouted = _by_array(_Shouted)
        params = {"ids": [1], "names": ["rp3"]}
        assert db_api._rendered(conn, shouted, params) is None
        assert db_api.rendered_rows(conn, shouted, params) == [(1, "rp1")]
        assert db_api._rendered(conn, statement, {"ids": (1,), "names": ["rp3"]}) is None
