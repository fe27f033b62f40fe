"""PostgreSQL: repeated statements run prepared (db/prepared.py), with the
same rows, counts and errors as unprepared, and step aside when the server
session is not the connection's own (a pooler sharing sessions)."""

from __future__ import annotations

import logging
from typing import Any, Iterator

import pytest
import sqlalchemy as sa
from oslo_db import exception as db_exc

from placement.db import api as db_api
from placement.db import prepared, tables
from placement.db.api import Database
from tests.db import statements

_RP = tables.resource_providers
_NOW = statements.NOW


def _database(**group: Any) -> Iterator[Database]:
    with statements.five_providers("postgresql", **group) as database:
        yield database


@pytest.fixture
def db() -> Iterator[Database]:
    yield from _database()


def _prepared(conn: sa.engine.Connection) -> list[str]:
    return [row[0] for row in conn.exec_driver_sql(
        "SELECT statement FROM pg_prepared_statements ORDER BY prepare_time")]


_BY_NAME = (sa.select(sa.literal("x"), _RP.c.id, _RP.c.created_at)
            .where(_RP.c.name.in_(sa.bindparam("names", expanding=True)),
                   _RP.c.generation >= sa.bindparam("least"),
                   _RP.c.created_at <= sa.bindparam("stamp", type_=sa.DateTime))
            .order_by(_RP.c.id))


def test_a_repeated_statement_runs_prepared_with_the_same_rows(db: Database) -> None:
    params = {"names": ["rp2", "rp4"], "least": 0, "stamp": _NOW}
    with db.reader() as conn:
        expected = [tuple(row) for row in conn.execute(_BY_NAME, params)]
        assert expected == [("x", 2, _NOW), ("x", 4, _NOW)]
    for _ in range(3):
        with db.reader() as conn:
            assert db_api.rendered_rows(conn, _BY_NAME, params) == expected
            # Other values, same statement: the prepared one.
            assert db_api.rendered_rows(conn, _BY_NAME, dict(params, least=3)) == [expected[1]]
    with db.reader() as conn:
        prepared = _prepared(conn)
    assert len([text for text in prepared if "resource_providers.name IN" in text]) == 1
    assert all(text.startswith("PREPARE placement_") for text in prepared)


def test_a_prepared_statement_is_planned_again_after_its_runs(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    # A plan made while a table was nearly empty must not outlive its
    # growth: PostgreSQL keeps a prepared plan until an ANALYZE.
    monkeypatch.setattr(prepared, "REPLAN_AFTER", 3)
    params = {"names": ["rp2", "rp4"], "least": 0, "stamp": _NOW}

    def prepared_at(conn: sa.engine.Connection) -> list[Any]:
        return [row[0] for row in conn.exec_driver_sql(
            "SELECT prepare_time FROM pg_prepared_statements "
            # Split so that this query, prepared in turn, is not found.
            "WHERE statement LIKE '%%resource_providers.' || 'name IN%%'")]

    with db.reader() as conn:
        expected = db_api.rendered_rows(conn, _BY_NAME, params)  # seen: not prepared
        assert not prepared_at(conn)
        assert db_api.rendered_rows(conn, _BY_NAME, params) == expected  # prepared, run 1
        first = prepared_at(conn)
        assert len(first) == 1
        for _ in range(2):  # runs 2 and 3 on the same plan
            assert db_api.rendered_rows(conn, _BY_NAME, params) == expected
        assert prepared_at(conn) == first
        assert db_api.rendered_rows(conn, _BY_NAME, params) == expected  # prepared again
        again = prepared_at(conn)
        assert len(again) == 1 and again[0] > first[0]
        assert db_api.rendered_rows(conn, _BY_NAME, params) == expected
        assert prepared_at(conn) == again


def test_counts_of_a_prepared_write_are_kept(db: Database) -> None:
    update = _RP.update().where(_RP.c.generation >= sa.bindparam("least")).values(
        generation=_RP.c.generation + 1)
    for least in (0, 3, 4, 100):
        with db.writer() as conn:
            counted = conn.execute(update, {"least": least}).rowcount
            assert counted == len(conn.execute(sa.select(_RP.c.id).where(
                _RP.c.generation >= least + 1)).all()) or least == 100
    assert counted == 0


def test_errors_of_prepared_statements_are_those_of_oslo_db(db: Database) -> None:
    insert = _RP.insert().values(
        uuid=sa.bindparam("uuid"), name=sa.bindparam("name"), generation=0, created_at=_NOW)
    for attempt in range(4):
        with pytest.raises(db_exc.DBDuplicateEntry):
            with db.writer() as conn:
                conn.execute(insert, {"uuid": "00000000-0000-0000-0000-000000000001",
                                      "name": "again%d" % attempt})
    with db.writer() as conn:  # a failed PREPARE left the connection usable
        conn.execute(insert, {"uuid": "new", "name": "new"})
        conn.execute(insert, {"uuid": "newer", "name": "newer"})
    with db.reader() as conn:
        assert len(db_api.raw_rows(conn, "SELECT id FROM resource_providers")) == 7


def test_a_statement_gone_from_the_session_turns_preparing_off(
        db: Database, caplog: pytest.LogCaptureFixture) -> None:
    sql = "SELECT id FROM resource_providers WHERE generation >= %(least)s ORDER BY id"
    for _ in range(2):
        with db.reader() as conn:
            assert db_api.raw_rows(conn, sql, {"least": 4}) == [(4,), (5,)]
    with db.reader() as conn:
        assert _prepared(conn)
        # What a pooler sharing server sessions looks like to us.
        conn.exec_driver_sql("DEALLOCATE ALL")
        with caplog.at_level(logging.WARNING):
            assert db_api.raw_rows(conn, sql, {"least": 4}) == [(4,), (5,)]
        assert "prepared_statements = false" in caplog.text
        assert db_api.raw_rows(conn, sql, {"least": 3}) == [(3,), (4,), (5,)]
        assert not _prepared(conn)


def test_turned_off_nothing_is_prepared() -> None:
    for db in _database(prepared_statements=False):
        for _ in range(3):
            with db.reader() as conn:
                assert db_api.raw_rows(conn, "SELECT id FROM resource_providers "
                                       "WHERE id = %(id)s", {"id": 2}) == [(2,)]
                assert not _prepared(conn)


def test_what_prepare_does_not_take_runs_as_it_is(db: Database) -> None:
    for _ in range(3):
        with db.writer() as conn:
            with conn.begin_nested():  # SAVEPOINT and RELEASE, repeated
                conn.exec_driver_sql("SET LOCAL lock_timeout = '5s'")
            assert db_api.raw_rows(conn, "SHOW lock_timeout") == [("5s",)]


def test_a_statement_postgresql_will_not_prepare_is_left_unprepared(db: Database) -> None:
    # A string compared with an integer column: a literal PostgreSQL
    # converts, a parameter declared text it refuses.
    sql = "SELECT id FROM resource_providers WHERE id = %(id)s"
    for _ in range(3):  # outside a transaction: run again as it is
        with db.reader() as conn:
            assert db_api.raw_rows(conn, sql, {"id": "2"}) == [(2,)]
    sql += " AND generation >= 0"
    with db.writer() as conn:
        assert db_api.raw_rows(conn, sql, {"id": "3"}) == [(3,)]
    with pytest.raises(db_exc.DBError):  # in a transaction: once
        with db.writer() as conn:
            db_api.raw_rows(conn, sql, {"id": "3"})
    for _ in range(2):
        with db.writer() as conn:
            assert db_api.raw_rows(conn, sql, {"id": "3"}) == [(3,)]


def test_list_parameters_are_prepared_by_their_items_type(db: Database) -> None:
    sql = ("SELECT id FROM resource_providers WHERE name = ANY(%(names)s::VARCHAR[])"
           " AND id = ANY(%(ids)s) ORDER BY id")
    cases = [({"names": ["rp1", "rp3"], "ids": [1, 3, 2 ** 40]}, [(1,), (3,)]),
             ({"names": ["rp2"], "ids": [2]}, [(2,)]),
             ({"names": [], "ids": [2]}, []),  # unprepared: no item type
             ({"names": ["rp1"], "ids": [1, None]}, [(1,)]),  # NULL items: int4[]
             ({"names": ["rp1"], "ids": [None]}, []),  # unprepared: NULLs only
             ({"names": ["rp1"], "ids": None}, [])]  # unprepared: NULL
    for _ in range(3):
        with db.reader() as conn:
            for params, rows in cases:
                assert db_api.raw_rows(conn, sql, params) == rows
        with db.writer() as conn:
            for params, rows in cases:
                assert db_api.raw_rows(conn, sql, params) == rows
    with db.reader() as conn:
        declared = " ".join(_prepared(conn))
    assert "(text[], int8[])" in declared and "(text[], int4[])" in declared


def test_a_list_of_nulls_cast_where_it_stands_is_prepared(db: Database) -> None:
    sql = ("SELECT count(*), count(x) FROM unnest(%(ids)s::INTEGER[]) AS x"
           " WHERE x IS NULL OR x = ANY(%(ids)s::INTEGER[])")
    for _ in range(3):
        with db.writer() as conn:
            assert db_api.raw_rows(conn, sql, {"ids": [None, None]}) == [(2, 0)]
            assert db_api.raw_rows(conn, sql, {"ids": [None, 2]}) == [(2, 1)]
    with db.reader() as conn:
        declared = " ".join(_prepared(conn))
    assert "(text[]) AS" in declared and "(int4[]) AS" in declared


def test_a_long_text_is_not_prepared(db: Database) -> None:
    ids = ", ".join(str(i) for i in range(100_000, 104_000))
    sql = "SELECT id FROM resource_providers WHERE id IN (2, %s)" % ids
    assert len(sql) > prepared.LONGEST
    for _ in range(3):
        with db.reader() as conn:
            assert db_api.raw_rows(conn, sql) == [(2,)]
            assert not [text for text in _prepared(conn) if "100000" in text]


def _plan_mode(conn: sa.engine.Connection) -> str:
    return str(conn.exec_driver_sql("SHOW plan_cache_mode").scalar())


def test_prepared_statements_run_on_generic_plans_on_every_connection(
        db: Database) -> None:
    # Two connections at once: the pool's first and a new one.
    with db.reader() as first, db.writer() as second:
        assert _plan_mode(first) == _plan_mode(second) == "force_generic_plan"
    # A writer that rolls back leaves the setting as it was.
    with pytest.raises(RuntimeError):
        with db.writer() as conn:
            conn.execute(sa.update(_RP).values(generation=_RP.c.generation + 1))
            raise RuntimeError("refused")
    for _ in range(3):
        with db.reader() as conn:
            assert _plan_mode(conn) == "force_generic_plan"


def test_without_prepared_statements_plans_are_postgresql_s_default() -> None:
    for database in _database(prepared_statements=False):
        with database.reader() as conn:
            assert _plan_mode(conn) == "auto"


def test_a_search_reads_changed_providers_through_one_prepared_text(db: Database) -> None:
    from placement.objects.candidates import search

    with db.writer() as conn:
        conn.execute(tables.inventories.insert(), [
            {"resource_provider_id": rp, "resource_class_id": 0, "total": 8 * rp,
             "reserved": 0, "min_unit": 1, "max_unit": 8, "step_size": 1,
             "allocation_ratio": 1.0, "created_at": _NOW} for rp in (1, 2, 3)])
    every = [[1], [2], [3], [1, 3]] * 2
    with db.reader() as conn:
        read = [sorted(row[:3] for row in search.fetch(
            conn, search.ENTRIES_AND_USAGE,
            {"provider_ids": ids, search.USAGE_OF: ids})) for ids in every]
        many = search.fetch(conn, "entries", {"provider_ids": list(range(1, 100))})
        prepared = _prepared(conn)
    assert read[:4] == [[(1, 0, 8)], [(2, 0, 16)], [(3, 0, 24)], [(1, 0, 8), (3, 0, 24)]]
    assert read[4:] == read[:4]
    assert sorted(row[:3] for row in many) == [(1, 0, 8), (2, 0, 16), (3, 0, 24)]
    # One text for every list of ids up to ARRAY_LONGEST; longer lists are
    # written into texts of their own, which are not prepared.
    assert len([text for text in prepared if "= ANY(" in text]) == 1
    assert not [text for text in prepared if "IN (1, 2," in text]
