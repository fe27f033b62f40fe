"""Object-level tests of the allocation write path that HTTP cannot reach
deterministically: retries, and projects created by two writers at once.

Each test gets a fresh migrated database on every reachable backend.
"""

from __future__ import annotations

import contextlib
import threading
import types
from typing import Any, Iterator

import pytest
import sqlalchemy as sa

from placement import exceptions
from placement.db import migration, tables
from placement.db.api import Database
from placement.objects import allocation, consumer
from tests import backends
from tests.functional.fixtures import make_conf


@contextlib.contextmanager
def _context(backend: str) -> Iterator[Any]:
    backends.require(backend)
    with backends.fresh_database(backend) as url:
        conf = make_conf(url)
        db = Database(conf)
        migration.upgrade(db)
        try:
            yield types.SimpleNamespace(db=db, config=conf)
        finally:
            db.dispose()


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def ctx(request: pytest.FixtureRequest) -> Iterator[Any]:
    with _context(request.param) as context:
        yield context


# SQLite writers never overlap (BEGIN IMMEDIATE queues them), so races
# between two open writer transactions exist only on the servers.
@pytest.fixture(params=["postgresql", "mysql"])
def server_ctx(request: pytest.FixtureRequest) -> Iterator[Any]:
    with _context(request.param) as context:
        yield context


def test_a_colliding_attempt_is_retried_until_it_succeeds(ctx: Any) -> None:
    calls = []

    def attempt() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise consumer.ConsumerChanged("c")
        return "done"

    assert allocation.with_retries(ctx, "test write", attempt) == "done"
    assert len(calls) == 3


def test_retries_are_bounded_by_the_configured_count(ctx: Any) -> None:
    ctx.config.set_override("allocation_conflict_retry_count", 2, group="placement")
    calls = []

    def attempt() -> None:
        calls.append(1)
        raise consumer.ConsumerChanged("c")

    with pytest.raises(exceptions.AllocationsConflict):
        allocation.with_retries(ctx, "test write", attempt)
    assert len(calls) == 3


def test_other_errors_are_not_retried(ctx: Any) -> None:
    calls = []

    def attempt() -> None:
        calls.append(1)
        raise exceptions.InventoryInvalid(resource_class="VCPU", resource_provider="x")

    with pytest.raises(exceptions.InventoryInvalid):
        allocation.with_retries(ctx, "test write", attempt)
    assert len(calls) == 1


def test_identities_are_created_once_and_found_again(ctx: Any) -> None:
    with ctx.db.writer() as conn:
        first = consumer.resolve_identities_in(conn, {"p1", "p2"}, {"u1"}, {"INSTANCE"})
    with ctx.db.writer() as conn:
        again = consumer.resolve_identities_in(conn, {"p1"}, {"u1", "u2"}, set())
    assert set(first.projects) == {"p1", "p2"}
    assert again.projects["p1"] == first.projects["p1"]
    assert again.users["u1"] == first.users["u1"]
    assert set(again.users) == {"u1", "u2"}
    with ctx.db.reader() as conn:
        count = conn.execute(sa.select(sa.func.count()).select_from(tables.projects))
        assert count.scalar_one() == 2


def test_a_project_created_concurrently_is_used_not_duplicated(server_ctx: Any) -> None:
    """The second writer waits for the first one's insert and then uses
    its row, without failing its own transaction."""
    ctx = server_ctx
    inserted = threading.Event()
    results: dict[str, int] = {}
    errors: list[BaseException] = []

    def second() -> None:
        try:
            inserted.wait(10)
            with ctx.db.writer() as conn:
                # Fix this transaction's snapshot before the first commits.
                conn.execute(sa.select(sa.func.count()).select_from(tables.users)).all()
                ids = consumer.resolve_identities_in(conn, {"shared"}, set(), set())
                results["second"] = ids.projects["shared"]
        except BaseException as exc:  # reported to the test thread
            errors.append(exc)

    thread = threading.Thread(target=second)
    thread.start()
    with ctx.db.writer() as conn:
        ids = consumer.resolve_identities_in(conn, {"shared"}, set(), set())
        results["first"] = ids.projects["shared"]
        inserted.set()
        # Give the second writer time to block on the uncommitted row.
        thread.join(0.5)
    thread.join(30)
    assert not errors, errors
    assert results["first"] == results["second"]


def _providers_with_vcpus(ctx: Any, uuids: list[str]) -> None:
    with ctx.db.writer() as conn:
        vcpu = conn.execute(sa.select(tables.resource_classes.c.id)
                            .where(tables.resource_classes.c.name == "VCPU")).scalar_one()
        for uuid in uuids:
            provider_id = conn.execute(
                sa.insert(tables.resource_providers).values(
                    uuid=uuid, name=uuid, generation=0)
                .returning(tables.resource_providers.c.id)).scalar_one()
            conn.execute(sa.insert(tables.inventories).values(
                resource_provider_id=provider_id, resource_class_id=vcpu, total=8,
                reserved=0, min_unit=1, max_unit=8, step_size=1, allocation_ratio=1.0))


def test_a_delete_racing_a_move_of_the_same_consumer_removes_everything(
        server_ctx: Any) -> None:
    """DELETE takes no provider lock: when another writer moves the
    consumer while the delete runs, the delete must not leave the moved
    allocations behind (it starts over once the consumer's generation
    tells it the consumer changed)."""
    ctx = server_ctx
    first, second = ("11111111-0000-4000-8000-000000000001",
                     "11111111-0000-4000-8000-000000000002")
    instance = "22222222-0000-4000-8000-000000000001"
    _providers_with_vcpus(ctx, [first, second])

    def claim(provider: str, generation: int | None) -> allocation.ConsumerClaim:
        return allocation.ConsumerClaim(
            consumer_uuid=instance, resources={provider: {"VCPU": 2}},
            project_id="p", user_id="u", generation=generation, check_generation=True)

    allocation.replace_all(ctx, [claim(first, None)])
    moving = threading.Event()
    errors: list[BaseException] = []

    def delete() -> None:
        try:
            moving.wait(10)
            allocation.delete_all_for_consumer(ctx, instance)
        except BaseException as exc:  # reported to the test thread
            errors.append(exc)

    thread = threading.Thread(target=delete)
    thread.start()
    move = claim(second, 1)
    with allocation.writing(ctx, [move]) as (conn, plan):
        state = allocation.begin_in(conn, plan)
        allocation.check_claims_in(plan, state)
        allocation.check_capacity_in(conn, plan, state)
        allocation.apply_in(conn, plan, state)
        moving.set()
        # Let the delete read the consumer as it was and wait on our rows.
        thread.join(0.5)
    thread.join(30)
    assert not thread.is_alive()
    assert not errors, errors
    with ctx.db.reader() as conn:
        left = conn.execute(sa.select(sa.func.count()).select_from(tables.allocations)
                            .where(tables.allocations.c.consumer_id == instance))
        assert left.scalar_one() == 0
        consumers = conn.execute(sa.select(sa.func.count()).select_from(tables.consumers)
                                 .where(tables.consumers.c.uuid == instance))
        assert consumers.scalar_one() == 0


@pytest.fixture
def pg_ctx() -> Iterator[Any]:
    with _context("postgresql") as context:
        yield context


def _allocation_row(provider_id: int, class_id: int, consumer_uuid: str, used: int
                    ) -> dict[str, Any]:
    return {"resource_provider_id": provider_id, "resource_class_id": class_id,
            "consumer_id": consumer_uuid, "used": used}


def test_consumers_and_allocations_are_created_in_one_statement(pg_ctx: Any) -> None:
    """PostgreSQL's claim path: new projects, users and types, the
    consumers naming them (or known ones) and their allocations."""
    ctx = pg_ctx
    _providers_with_vcpus(ctx, ["rp1"])
    with ctx.db.writer() as conn:
        known = consumer.resolve_identities_in(conn, {"old-project"}, set(), set())
    with ctx.db.writer() as conn:
        rp_id = conn.execute(sa.select(tables.resource_providers.c.id)).scalar_one()
        consumer.create_with_allocations_in(conn, [
            consumer.NewConsumer("c1", "old-project", "new-user", "INSTANCE"),
            consumer.NewConsumer("c2", "new-project", "new-user", None),
        ], [_allocation_row(rp_id, 0, "c1", 2), _allocation_row(rp_id, 0, "c2", 3)],
            known)
    with ctx.db.reader() as conn:
        rows = conn.execute(sa.text(
            "SELECT c.uuid, p.external_id, u.external_id, t.name, c.generation "
            "FROM consumers c JOIN projects p ON p.id = c.project_id "
            "JOIN users u ON u.id = c.user_id "
            "LEFT JOIN consumer_types t ON t.id = c.consumer_type_id ORDER BY c.uuid")).all()
        used = conn.execute(sa.text(
            "SELECT consumer_id, used FROM allocations ORDER BY consumer_id")).all()
    assert [tuple(row) for row in rows] == [
        ("c1", "old-project", "new-user", "INSTANCE", 1),
        ("c2", "new-project", "new-user", None, 1)]
    assert [tuple(row) for row in used] == [("c1", 2), ("c2", 3)]


def test_a_project_created_concurrently_makes_the_one_statement_start_over(
        pg_ctx: Any) -> None:
    """A project another writer inserted after this write read its ids is
    skipped by the insert: the consumer is not created, ConsumerChanged
    says the write must start over, and nothing of it stays."""
    ctx = pg_ctx
    _providers_with_vcpus(ctx, ["rp1"])
    inserted = threading.Event()
    errors: list[BaseException] = []

    def second() -> None:
        try:
            inserted.wait(10)
            with ctx.db.writer() as conn:
                rp_id = conn.execute(sa.select(tables.resource_providers.c.id)).scalar_one()
                consumer.create_with_allocations_in(
                    conn, [consumer.NewConsumer("c1", "shared", "user", None)],
                    [_allocation_row(rp_id, 0, "c1", 1)], consumer.Identities({}, {}, {}))
        except BaseException as exc:  # reported to the test thread
            errors.append(exc)

    thread = threading.Thread(target=second)
    thread.start()
    with ctx.db.writer() as conn:
        consumer.resolve_identities_in(conn, {"shared"}, set(), set())
        inserted.set()
        # Give the second writer time to block on the uncommitted row.
        thread.join(0.5)
    thread.join(30)
    assert len(errors) == 1 and isinstance(errors[0], consumer.ConsumerChanged), errors
    with ctx.db.reader() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM consumers")).scalar_one() == 0
        assert conn.execute(sa.text("SELECT count(*) FROM allocations")).scalar_one() == 0
        assert conn.execute(sa.text("SELECT count(*) FROM users")).scalar_one() == 0


def test_the_capacities_read_with_a_claim_are_those_before_its_inserts(
        pg_ctx: Any) -> None:
    """The select run along with the create statement sees what the
    database held when it began: the usage the claim is checked against
    leaves out the claim's own allocations."""
    from placement.objects import inventory
    ctx = pg_ctx
    _providers_with_vcpus(ctx, ["rp1"])
    allocation.replace_all(ctx, [allocation.ConsumerClaim(
        consumer_uuid="c0", resources={"rp1": {"VCPU": 2}}, project_id="p",
        user_id="u")])
    with ctx.db.writer() as conn:
        rp_id = conn.execute(sa.select(tables.resource_providers.c.id)).scalar_one()
        read = consumer.create_with_allocations_in(
            conn, [consumer.NewConsumer("c1", "p1", "u1", None)],
            [_allocation_row(rp_id, 0, "c1", 3)], consumer.Identities({}, {}, {}),
            along=inventory.capacities_statement(),
            along_params={"provider_ids": [rp_id], "class_ids": [0]})
        capacities = inventory.capacities_of(read)
        assert list(capacities) == [(rp_id, 0)]
        assert capacities[rp_id, 0].used == 2
        assert capacities[rp_id, 0].capacity == 8
        assert inventory.capacities_in(conn, [rp_id], [0])[rp_id, 0].used == 5


def test_a_claim_refused_for_capacity_leaves_nothing_behind(
        pg_ctx: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """On PostgreSQL a new consumer's claim is written before its
    capacity is checked; the refusal must take the consumer, its
    allocations and its new project and user away with it."""
    ctx = pg_ctx
    _providers_with_vcpus(ctx, ["rp1"])
    created: list[str] = []
    real_create = consumer.create_with_allocations_in

    def create(conn: Any, consumers: Any, *args: Any, **kwargs: Any) -> Any:
        created.extend(c.uuid for c in consumers)
        return real_create(conn, consumers, *args, **kwargs)

    monkeypatch.setattr(consumer, "create_with_allocations_in", create)
    allocation.replace_all(ctx, [allocation.ConsumerClaim(
        consumer_uuid="c0", resources={"rp1": {"VCPU": 6}}, project_id="p",
        user_id="u")])
    with pytest.raises(exceptions.AllocationCapacityExceeded):
        allocation.replace_all(ctx, [allocation.ConsumerClaim(
            consumer_uuid="c1", resources={"rp1": {"VCPU": 3}},
            project_id="new-project", user_id="new-user", consumer_type="INSTANCE")])
    allocation.replace_all(ctx, [allocation.ConsumerClaim(
        consumer_uuid="c2", resources={"rp1": {"VCPU": 2}}, project_id="p",
        user_id="u")])
    with ctx.db.reader() as conn:
        def names(sql: str) -> list[Any]:
            return [row[0] for row in conn.execute(sa.text(sql))]

        assert names("SELECT uuid FROM consumers ORDER BY uuid") == ["c0", "c2"]
        assert names("SELECT consumer_id FROM allocations ORDER BY consumer_id") == [
            "c0", "c2"]
        assert names("SELECT external_id FROM projects") == ["p"]
        assert names("SELECT external_id FROM users") == ["u"]
    # Each claim took the one-statement path, the refused one included.
    assert created == ["c0", "c1", "c2"]
