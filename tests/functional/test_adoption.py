"""Taking over a database from OpenStack Placement, and handing it back.

For each of two upstream releases with different schema heads, on each
backend: the release makes and serves a new database, which is filled
through its REST API (nested and sharing providers, deleted ones leaving
id gaps, custom classes and traits, aggregates, consumers of several
projects, users and types, allocations written and removed).  Then:

1. every read in :func:`reads` is asked of upstream and kept;
2. ``placement-manage db sync`` of ours adopts the database; every row of
   every table is still there with the same values and ids;
3. our application gives the same answer to every read;
4. we write (a new custom class, provider, allocations; a root provider
   deleted; traits changed) and keep our answers;
5. upstream 16.0.0 takes the database back: its own ``db sync`` finds
   nothing to do, its service answers every read as we did, and it can
   rename and delete the classes we created.

Answers are compared as parsed JSON with lists sorted, so that order
differences (issue of list order, tested elsewhere) do not hide behind
or cause a failure here; status codes must be equal.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import sqlalchemy as sa

from placement import app
from placement.db import adoption, migration
from placement.db.api import Database
from tests import backends
from tests.functional import fixtures, inprocess, servers, upstream

pytestmark = pytest.mark.slow

BACKENDS = ["sqlite", "postgresql", "mysql"]

# (status, JSON body or None)
Answer = tuple[int, Any]
Call = Callable[..., Answer]


def _uuid(n: int) -> str:
    return "a0000000-0000-4000-8000-%012d" % n


CN1, NUMA0, NUMA1, GPU, CN2, CN3, POOL, GONE, NEW, SCRATCH = (
    _uuid(n) for n in range(1, 11))
AZ1, AZ2, SHARE = _uuid(101), _uuid(102), _uuid(103)
C1, C2, C3, C4, C5, C6, C7 = (_uuid(n) for n in range(201, 208))
P1, P2, P3 = "project-1", "project-2", "project-3"
U1, U2, U3 = "user-1", "user-2", "user-3"


def _over(server: Any) -> Call:
    def call(method: str, path: str, body: Any = None, version: str = "1.39") -> Answer:
        headers = {"X-Auth-Token": "admin", "Accept": "application/json",
                   "OpenStack-API-Version": "placement " + version}
        resp = server.request(method, path, body=body, headers=headers)
        return resp.status, json.loads(resp.body) if resp.body else None
    return call


def _in_process(application: Any) -> Call:
    def call(method: str, path: str, body: Any = None, version: str = "1.39") -> Answer:
        resp = inprocess.send(application, method, path, body, version=version)
        return resp.status_int, json.loads(resp.body) if resp.body else None
    return call


class Writer:
    """Writes through an API at one microversion, failing on any error."""

    def __init__(self, call: Call, version: str) -> None:
        self.call = call
        self.version = version
        self.typed = _at_least(version, "1.38")

    def ok(self, method: str, path: str, body: Any = None, version: str | None = None
           ) -> Any:
        status, answer = self.call(method, path, body, version or self.version)
        assert status < 300, (method, path, status, answer)
        return answer

    def generation(self, rp: str) -> int:
        return int(self.ok("GET", "/resource_providers/" + rp)["generation"])

    def provider(self, rp: str, name: str, parent: str | None = None) -> None:
        body: dict[str, Any] = {"uuid": rp, "name": name}
        if parent:
            body["parent_provider_uuid"] = parent
        self.ok("POST", "/resource_providers", body)

    def inventories(self, rp: str, **classes: dict[str, Any]) -> None:
        self.ok("PUT", "/resource_providers/%s/inventories" % rp, {
            "resource_provider_generation": self.generation(rp),
            "inventories": classes})

    def traits(self, rp: str, *names: str) -> None:
        self.ok("PUT", "/resource_providers/%s/traits" % rp, {
            "resource_provider_generation": self.generation(rp), "traits": list(names)})

    def aggregates(self, rp: str, *uuids: str) -> None:
        self.ok("PUT", "/resource_providers/%s/aggregates" % rp, {
            "resource_provider_generation": self.generation(rp),
            "aggregates": list(uuids)})

    def allocate(self, consumer: str, project: str, user: str,
                 consumer_type: str = "INSTANCE", **by_provider: dict[str, int]) -> None:
        body: dict[str, Any] = {
            "allocations": {rp: {"resources": resources}
                            for rp, resources in by_provider.items()},
            "project_id": project, "user_id": user, "consumer_generation": None}
        if self.typed:
            body["consumer_type"] = consumer_type
        self.ok("PUT", "/allocations/" + consumer, body)


def _at_least(version: str, wanted: str) -> bool:
    def parts(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split("."))
    return parts(version) >= parts(wanted)


def _inventory(total: int, **fields: Any) -> dict[str, Any]:
    return {"total": total, **fields}


def fill(api: Writer) -> None:
    """The data set upstream writes before it hands the database over."""
    for name in ("CUSTOM_GOLD", "CUSTOM_SILVER"):
        api.ok("POST", "/resource_classes", {"name": name})
    api.ok("DELETE", "/resource_classes/CUSTOM_SILVER")
    for name in ("CUSTOM_RAID", "CUSTOM_FAST", "CUSTOM_UNUSED"):
        api.ok("PUT", "/traits/" + name)
    api.provider(CN1, "cn1")
    api.provider(NUMA0, "cn1-numa0", parent=CN1)
    api.provider(NUMA1, "cn1-numa1", parent=CN1)
    api.provider(GPU, "cn1-numa0-gpu", parent=NUMA0)
    api.provider(GONE, "gone")  # deleted below: an id gap
    api.provider(CN2, "cn2")
    api.provider(CN3, "cn3")
    api.provider(POOL, "disk-pool")
    api.ok("DELETE", "/resource_providers/" + GONE)
    api.inventories(CN1, DISK_GB=_inventory(200, reserved=10))
    for numa in (NUMA0, NUMA1):
        api.inventories(numa, VCPU=_inventory(8, allocation_ratio=4.0),
                        MEMORY_MB=_inventory(8192, min_unit=256, step_size=256))
    api.inventories(GPU, VGPU=_inventory(4), CUSTOM_GOLD=_inventory(2))
    api.inventories(CN2, VCPU=_inventory(16), DISK_GB=_inventory(500, max_unit=100),
                    MEMORY_MB=_inventory(32768, reserved=512))
    api.inventories(CN3, VCPU=_inventory(4), MEMORY_MB=_inventory(4096))
    api.inventories(POOL, DISK_GB=_inventory(2000))
    api.traits(CN1, "HW_CPU_X86_AVX2", "CUSTOM_RAID")
    api.traits(NUMA0, "HW_NUMA_ROOT")
    api.traits(GPU, "CUSTOM_FAST")
    api.traits(CN2, "HW_CPU_X86_AVX2")
    api.traits(POOL, "MISC_SHARES_VIA_AGGREGATE")
    api.aggregates(CN1, AZ1, SHARE)
    api.aggregates(CN2, AZ2)
    api.aggregates(CN3, AZ2, SHARE)
    api.aggregates(POOL, SHARE)
    api.allocate(C1, P1, U1, **{CN2: {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 20}})
    api.allocate(C2, P1, U2, **{NUMA0: {"VCPU": 1, "MEMORY_MB": 512},
                                POOL: {"DISK_GB": 50}, GPU: {"VGPU": 1}})
    api.allocate(C3, P2, U1, **{CN3: {"VCPU": 4}})
    api.allocate(C4, P2, U2, **{CN2: {"VCPU": 1}})
    api.ok("DELETE", "/allocations/" + C4)
    api.allocate(C5, P2, U2, consumer_type="MIGRATION", **{CN2: {"VCPU": 1}})


def write_as_ours(api: Writer) -> None:
    """What we write once the database is ours."""
    api.ok("POST", "/resource_classes", {"name": "CUSTOM_NEW"})
    api.ok("PUT", "/resource_classes/CUSTOM_SPARE")
    api.provider(NEW, "ours-new")
    api.provider(SCRATCH, "scratch")
    api.ok("DELETE", "/resource_providers/" + SCRATCH)
    api.inventories(NEW, VCPU=_inventory(2), CUSTOM_NEW=_inventory(4))
    api.aggregates(NEW, AZ1)
    api.traits(CN2, "HW_CPU_X86_AVX2", "CUSTOM_FAST")
    api.allocate(C6, P3, U3, **{NEW: {"CUSTOM_NEW": 1, "VCPU": 1}})
    # A root provider with traits and aggregates (upstream's foreign keys
    # made MySQL refuse this).
    api.ok("DELETE", "/allocations/" + C3)
    api.ok("DELETE", "/resource_providers/" + CN3)


PROVIDERS = (CN1, NUMA0, NUMA1, GPU, CN2, CN3, POOL, GONE, NEW)
CONSUMERS = (C1, C2, C3, C4, C5, C6)


def reads(version: str) -> list[tuple[str, str]]:
    """(microversion, path) of every read compared."""
    paths = [
        "/resource_providers",
        "/resource_providers?name=cn2",
        "/resource_providers?uuid=" + CN1,
        "/resource_providers?member_of=" + AZ1,
        "/resource_providers?member_of=in:%s,%s" % (AZ1, AZ2),
        "/resource_providers?resources=VCPU:2,MEMORY_MB:1024",
        "/resource_providers?resources=DISK_GB:50",
        "/resource_providers?required=HW_CPU_X86_AVX2",
        "/resource_providers?required=!CUSTOM_RAID",
        "/resource_providers?in_tree=" + NUMA1,
        "/resource_classes",
        "/resource_classes/CUSTOM_GOLD",
        "/resource_classes/CUSTOM_SILVER",
        "/resource_classes/CUSTOM_NEW",
        "/traits",
        "/traits?name=startswith:CUSTOM",
        "/traits?associated=true",
        "/traits?associated=false",
        "/traits/CUSTOM_RAID",
        "/usages?project_id=" + P1,
        "/usages?project_id=%s&user_id=%s" % (P1, U2),
        "/usages?project_id=" + P2,
        "/usages?project_id=" + P3,
        "/allocation_candidates?resources=VCPU:1,MEMORY_MB:512",
        "/allocation_candidates?resources=VCPU:1,DISK_GB:10",
        "/allocation_candidates?resources=VCPU:1&required=HW_CPU_X86_AVX2",
        "/allocation_candidates?resources=DISK_GB:100",
        "/allocation_candidates?resources=CUSTOM_GOLD:1&required=CUSTOM_FAST",
        "/allocation_candidates?resources=VCPU:1&member_of=" + AZ2,
        "/allocation_candidates?resources=VCPU:1&in_tree=" + CN1,
        "/allocation_candidates?resources=VCPU:1&root_required=CUSTOM_RAID",
        "/allocation_candidates?resources1=VCPU:1,MEMORY_MB:256"
        "&resources2=VGPU:1&group_policy=none",
        "/allocation_candidates?resources1=VCPU:1&resources2=VCPU:1"
        "&group_policy=isolate",
        "/allocation_candidates?resources=CUSTOM_NEW:1",
    ]
    for rp in PROVIDERS:
        base = "/resource_providers/" + rp
        paths += [base, base + "/inventories", base + "/inventories/VCPU",
                  base + "/usages", base + "/traits", base + "/aggregates",
                  base + "/allocations"]
    paths += ["/allocations/" + consumer for consumer in CONSUMERS]
    found = [(version, path) for path in paths]
    # The oldest shapes of a few documents too.
    found += [("1.0", "/resource_providers"), ("1.2", "/resource_classes"),
              ("1.0", "/resource_providers/%s/aggregates" % CN1),
              ("1.0", "/allocations/" + C2)]
    return found


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):  # request ids differ by nature
        return {key: _canonical(item) for key, item in value.items()
                if key != "request_id"}
    if isinstance(value, list):
        items = [_canonical(item) for item in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    return value


def answers(call: Call, version: str) -> dict[tuple[str, str], Answer]:
    found = {}
    for microversion, path in reads(version):
        status, body = call("GET", path, version=microversion)
        found[(microversion, path)] = (status, _canonical(body))
    return found


def upstream_fails(backend: str, key: tuple[str, str]) -> bool:
    """Reads upstream answers with a 500 of its own (its SQL for usages by
    consumer type is refused by PostgreSQL), where ours answers."""
    version, path = key
    return (backend == "postgresql" and path.startswith("/usages?")
            and _at_least(version, "1.38"))


def assert_same(expected: dict[tuple[str, str], Answer],
                actual: dict[tuple[str, str], Answer],
                unless: Callable[[tuple[str, str]], bool] = lambda key: False) -> None:
    differing = {key: (expected[key], actual[key])
                 for key in expected
                 if expected[key] != actual[key] and not unless(key)}
    assert not differing, "%d answers differ: %s\n%s" % (
        len(differing), sorted(differing), json.dumps(
            {"%s %s" % key: pair for key, pair in differing.items()})[:6000])


def table_rows(url: str, columns: dict[str, set[str]] | None = None
               ) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every placement table, sorted, with column names; of
    the ``columns`` named (by table) when given."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            inspector = sa.inspect(conn)
            rows = {}
            for table in sorted(inspector.get_table_names()):
                if table in (adoption.UPSTREAM_VERSION_TABLE, migration.VERSION_TABLE,
                             "consumer_types"):
                    continue
                if columns is not None and table not in columns:
                    continue  # ours alone (baremetal_allocations): upstream has none
                reflected = sa.Table(table, sa.MetaData(), autoload_with=conn)
                names = sorted(column.name for column in reflected.columns
                               if columns is None or column.name in columns[table])
                rows[table] = sorted(
                    tuple((name, row._mapping[name]) for name in names)
                    for row in conn.execute(sa.select(reflected)))
            return rows
    finally:
        engine.dispose()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    backends.require(request.param)
    return str(request.param)


@contextlib.contextmanager
def ours(url: str) -> Iterator[Call]:
    """Our application on ``url`` (already migrated), in-process."""
    conf = fixtures.make_conf(url)
    db = Database(conf)
    try:
        yield _in_process(app.build_app(conf, db))
    finally:
        db.dispose()


def _our_db_sync(url: str) -> migration.SchemaState:
    db = Database(fixtures.make_conf(url))
    try:
        return migration.upgrade(db)
    finally:
        db.dispose()


@pytest.mark.parametrize("version", sorted(upstream.RELEASES))
def test_adopt_serve_write_and_hand_back(backend: str, version: str,
                                         tmp_path: Path) -> None:
    release = upstream.RELEASES[version]
    newest = upstream.RELEASES["16.0.0"]
    with backends.fresh_database(backend) as url:
        with upstream.serve(release, url, tmp_path) as server:
            fill(Writer(_over(server), release.max_microversion))
            theirs = answers(_over(server), release.max_microversion)
        rows = table_rows(url)

        before = _our_db_sync(url)
        assert (before.kind, before.revision) == ("upstream", release.head)
        if backend == "sqlite":  # ids of deleted providers never reused
            assert "AUTOINCREMENT" in _schema_text(url, "resource_providers")
        # Every row and id kept (columns adoption added aside).
        assert table_rows(url, {table: {name for name, _ in found[0]}
                                for table, found in rows.items() if found}) == {
            table: found for table, found in rows.items() if found}
        with ours(url) as call:
            answered = answers(call, release.max_microversion)
            assert_same(theirs, answered,
                        unless=lambda key: upstream_fails(backend, key))
            assert {answered[key][0] for key in answered
                    if upstream_fails(backend, key)} <= {200}
            writer = Writer(call, newest.max_microversion)
            write_as_ours(writer)
            ours_after = answers(call, newest.max_microversion)

        # The way back: upstream's newest release takes it as it is.
        with upstream.serve(newest, url, tmp_path) as server:
            call = _over(server)
            assert_same(ours_after, answers(call, newest.max_microversion),
                        unless=lambda key: upstream_fails(backend, key))
            back = Writer(call, newest.max_microversion)
            # Classes we created are custom to upstream: renamed, deleted.
            back.ok("PUT", "/resource_classes/CUSTOM_SPARE",
                    {"name": "CUSTOM_SPARE_RENAMED"}, version="1.6")
            back.ok("DELETE", "/resource_classes/CUSTOM_SPARE_RENAMED")
            back.ok("POST", "/resource_classes", {"name": "CUSTOM_AFTER"})
            back.inventories(NEW, VCPU=_inventory(2), CUSTOM_NEW=_inventory(4),
                             CUSTOM_AFTER=_inventory(1))
            back.allocate(C7, P1, U1, **{NEW: {"CUSTOM_AFTER": 1}})
            assert back.ok("GET", "/allocations/" + C7)["allocations"]


def _run(command: str, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([servers.script(command), *args], capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL,
                          env=servers.clean_env(OS_PLACEMENT_DATABASE__CONNECTION=url))


def test_commands_say_what_they_find(backend: str, tmp_path: Path) -> None:
    release = upstream.RELEASES["16.0.0"]
    with backends.fresh_database(backend) as url:
        synced = upstream.db_sync(release, url, tmp_path)
        assert synced.returncode == 0, synced.stderr
        version = _run("placement-manage", url, "db", "version")
        assert version.returncode == 0, version.stderr
        assert version.stdout.strip() == (
            "upstream OpenStack Placement revision a082b8bb98d0: adoptable: "
            "'placement-manage db sync' adopts it in place")
        status = _run("placement-status", url, "upgrade", "check")
        assert status.returncode == 2, status.stdout
        assert ("upstream revision a082b8bb98d0, not adopted yet; adoptable"
                in " ".join(status.stdout.replace("|", " ").split())), status.stdout

        # A NULL upstream allows and we do not: refused, nothing changed.
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                conn.exec_driver_sql(
                    "INSERT INTO resource_providers (uuid, name, generation) "
                    "VALUES ('%s', NULL, 0)" % CN1)
            schema_before = _schema(engine)
        finally:
            engine.dispose()
        version = _run("placement-manage", url, "db", "version")
        assert "not adoptable as it is: 1 resource providers without a name" in version.stdout
        sync = _run("placement-manage", url, "db", "sync")
        assert sync.returncode == 1
        assert "Traceback" not in sync.stderr
        assert sync.stderr.startswith(
            "placement-manage: the upstream Placement database (revision "
            "a082b8bb98d0) cannot be adopted as it is; nothing was changed: "
            "1 resource providers without a name"), sync.stderr
        engine = sa.create_engine(url)
        try:
            assert _schema(engine) == schema_before
        finally:
            engine.dispose()

        with engine.begin() as conn:
            conn.exec_driver_sql(
                "UPDATE resource_providers SET name = 'named', root_provider_id = id")
        engine.dispose()
        sync = _run("placement-manage", url, "db", "sync")
        assert sync.returncode == 0, sync.stderr
        assert sync.stdout.startswith(
            "adopted the OpenStack Placement database at upstream revision "
            "a082b8bb98d0\n")
        status = _run("placement-status", url, "upgrade", "check")
        assert status.returncode == 0, status.stdout
        version = _run("placement-manage", url, "db", "version")
        assert version.stdout.strip() == migration.head_revision()


def _schema_text(url: str, table: str) -> str:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return str(conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = '%s'" % table).scalar())
    finally:
        engine.dispose()


def _schema(engine: sa.engine.Engine) -> dict[str, Any]:
    """Tables, columns, keys and indexes, and the version tables' rows."""
    with engine.connect() as conn:
        inspector = sa.inspect(conn)
        found: dict[str, Any] = {}
        for table in inspector.get_table_names():
            found[table] = (
                [(c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(table)],
                sorted(str(k) for k in inspector.get_foreign_keys(table)),
                sorted(str(i) for i in inspector.get_indexes(table)))
        found["versions"] = conn.exec_driver_sql(
            "SELECT version_num FROM alembic_version").all()
        return found
