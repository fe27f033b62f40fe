"""How the candidate search loads trees: asking the database for the trees
that hold the requested classes, or reading every provider and dropping
the other trees itself, must give the same forest.

The gabbits cannot tell the two apart (the answers are the same either
way); what differs is what the search holds and how fast it goes, so these
tests look at the loaded forest itself, on every backend.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest
import sqlalchemy as sa

from placement.db.api import Database
from placement import kept as provider_cache
from placement.objects.candidates import search
from placement.objects.candidates.loader import Loader
from placement.objects.candidates.trees import Forest
from tests.functional import inprocess
from tests.functional.inprocess import send

HOST1 = "b1d00000-0000-4000-8000-000000000001"
NUMA1 = "b1d00000-0000-4000-8000-0000000000a1"
HOST2 = "b1d00000-0000-4000-8000-000000000002"
DISKS = "b1d00000-0000-4000-8000-0000000000d5"
ADDRESSES = "b1d00000-0000-4000-8000-0000000000a5"
FPGA_HOST = "b1d00000-0000-4000-8000-0000000000f9"
AGGREGATE = "b1d00000-0000-4000-8000-0000000000ee"


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Database]]:
    with inprocess.served(request.param) as both:
        yield both


def _loader(conn: sa.engine.Connection, classes: dict[str, int]) -> Loader:
    """A loader through the worker's own store, as requests use."""
    return Loader(conn, classes, provider_cache.of(conn.engine))


def _provider(application: Any, uuid: str, inventories: dict[str, int],
              parent: str | None = None, traits: tuple[str, ...] = (),
              aggregates: tuple[str, ...] = ()) -> None:
    body: dict[str, Any] = {"uuid": uuid, "name": uuid}
    if parent:
        body["parent_provider_uuid"] = parent
    assert send(application, "POST", "/resource_providers", body).status_int == 200
    path = "/resource_providers/%s" % uuid
    generation = 0
    if inventories:
        assert send(application, "PUT", path + "/inventories", {
            "resource_provider_generation": generation,
            "inventories": {name: {"total": total}
                            for name, total in inventories.items()},
        }).status_int == 200
        generation += 1
    if traits:
        assert send(application, "PUT", path + "/traits", {
            "resource_provider_generation": generation, "traits": list(traits),
        }).status_int == 200
        generation += 1
    if aggregates:
        assert send(application, "PUT", path + "/aggregates", {
            "resource_provider_generation": generation,
            "aggregates": list(aggregates),
        }).status_int == 200


def _shape(forest: Any) -> dict[str, Any]:
    """uuid -> what the search knows of the provider."""
    by_id = forest.providers
    return {p.uuid: (by_id[p.root_id].uuid, dict(p.inventories), set(p.traits),
                     set(p.aggregates))
            for p in by_id.values()}


def test_reading_everyone_loads_the_trees_the_database_would_name(
        served: tuple[Any, Database]) -> None:
    application, db = served
    # Two compute trees (one with a NUMA child holding the VCPU), a host
    # with disks only, a shared pool of addresses in the hosts' aggregate
    # and a lone FPGA host.
    _provider(application, HOST1, {"DISK_GB": 100}, aggregates=(AGGREGATE,))
    _provider(application, NUMA1, {"VCPU": 8}, parent=HOST1)
    _provider(application, HOST2, {"VCPU": 4, "MEMORY_MB": 512},
              aggregates=(AGGREGATE,))
    _provider(application, DISKS, {"DISK_GB": 500})
    _provider(application, ADDRESSES, {"IPV4_ADDRESS": 16},
              traits=("MISC_SHARES_VIA_AGGREGATE",), aggregates=(AGGREGATE,))
    _provider(application, FPGA_HOST, {"FPGA": 1})

    with db.reader() as conn:
        classes = search.check_names(conn, []).classes
        cache = provider_cache.of(conn.engine)
        vcpu = frozenset({"VCPU"})
        assert not cache.reads_everyone(vcpu)
        narrowed = Forest(_loader(conn, classes).relevant_trees([classes["VCPU"]]))
        # The VCPU trees held every provider read so far: read everyone next.
        assert cache.reads_everyone(vcpu)
        everyone = Forest(_loader(conn, classes).relevant_trees([classes["VCPU"]]))
        assert _shape(everyone) == _shape(narrowed)
        assert set(_shape(everyone)) == {HOST1, NUMA1, HOST2}
        assert everyone.anchors == {}
        assert everyone.trees.keys() == narrowed.trees.keys()

        # FPGA trees hold a small share of the providers read by now.
        _loader(conn, classes).relevant_trees([classes["FPGA"]])
        assert not cache.reads_everyone(frozenset({"FPGA"}))


def test_reading_everyone_finds_the_trees_a_sharing_provider_serves(
        served: tuple[Any, Database]) -> None:
    # A disk pool shares with the hosts of its aggregate, one of which has
    # none of the classes asked for: the database names it when asked
    # for the trees the pool serves; read with everyone, it is found
    # among the trees read.
    application, db = served
    _provider(application, HOST1, {"VCPU": 8}, aggregates=(AGGREGATE,))
    _provider(application, HOST2, {"MEMORY_MB": 512}, aggregates=(AGGREGATE,))
    _provider(application, DISKS, {"DISK_GB": 500},
              traits=("MISC_SHARES_VIA_AGGREGATE",), aggregates=(AGGREGATE,))
    _provider(application, FPGA_HOST, {"FPGA": 1})

    with db.reader() as conn:
        classes = search.check_names(conn, []).classes
        cache = provider_cache.of(conn.engine)
        wanted = [classes["VCPU"], classes["DISK_GB"]]
        assert not cache.reads_everyone(frozenset({"VCPU", "DISK_GB"}))
        narrowed = Forest(_loader(conn, classes).relevant_trees(wanted))
        assert cache.reads_everyone(frozenset({"VCPU", "DISK_GB"}))
        everyone = Forest(_loader(conn, classes).relevant_trees(wanted))
    assert _shape(everyone) == _shape(narrowed)
    assert set(_shape(everyone)) == {HOST1, HOST2, DISKS}
    assert list(everyone.trees) == list(narrowed.trees)


def test_a_class_created_after_the_names_were_read_is_named(
        served: tuple[Any, Database]) -> None:
    # A search reads the class names first; a writer may then add a class,
    # with inventory of it, before the search reads that inventory.
    application, db = served
    with db.reader() as conn:
        classes = search.check_names(conn, []).classes
    assert send(application, "PUT", "/resource_classes/CUSTOM_LATE").status_int == 201
    _provider(application, HOST1, {"VCPU": 4, "CUSTOM_LATE": 2})
    with db.reader() as conn:
        forest = Forest(_loader(conn, classes).relevant_trees([classes["VCPU"]]))
    inventories = _shape(forest)[HOST1][1]
    assert set(inventories) == {"VCPU", "CUSTOM_LATE"}
    assert inventories["CUSTOM_LATE"].total == 2


def test_unchanged_trees_are_the_ones_read_before(
        served: tuple[Any, Database]) -> None:
    application, db = served
    _provider(application, HOST1, {"DISK_GB": 100}, aggregates=(AGGREGATE,))
    _provider(application, NUMA1, {"VCPU": 8}, parent=HOST1)
    _provider(application, HOST2, {"VCPU": 4, "MEMORY_MB": 512})

    def read() -> dict[str, Any]:
        with db.reader() as conn:
            classes = search.check_names(conn, []).classes
            trees = _loader(conn, classes).relevant_trees([classes["VCPU"]])
        forest = Forest(trees)
        return {forest.providers[tree.root_id].uuid: tree for tree in trees}

    first = read()
    second = read()
    assert set(first) == {HOST1, HOST2}
    assert all(second[uuid] is first[uuid] for uuid in first)

    # A claim on host2's tree (a bump of its generation) and the removal of
    # host1's aggregate (none): each tree is read anew, with what changed.
    assert send(application, "PUT", "/allocations/%s" % ADDRESSES, {
        "allocations": {HOST2: {"resources": {"VCPU": 3}}},
        "project_id": AGGREGATE, "user_id": AGGREGATE,
        "consumer_generation": None, "consumer_type": "INSTANCE"},
    ).status_int == 204
    third = read()
    assert third[HOST1] is first[HOST1]
    assert third[HOST2] is not first[HOST2]
    host2 = third[HOST2].providers[0]
    assert host2.inventories["VCPU"].used == 3
    assert send(application, "PUT", "/resource_providers/%s/aggregates" % HOST1,
                [], version="1.18").status_int == 200
    fourth = read()
    assert fourth[HOST1] is not first[HOST1]
    assert fourth[HOST1].providers[0].aggregates == frozenset()
    assert fourth[HOST2] is third[HOST2]


def test_a_tree_read_in_another_order_is_the_same_tree(
        served: tuple[Any, Database], monkeypatch: pytest.MonkeyPatch) -> None:
    application, db = served
    _provider(application, HOST1, {"DISK_GB": 100}, aggregates=(AGGREGATE,))
    _provider(application, NUMA1, {"VCPU": 8}, parent=HOST1)
    with db.reader() as conn:
        classes = search.check_names(conn, []).classes
        loader = _loader(conn, classes)
        tree, = loader.relevant_trees([classes["VCPU"]])
        # As if the database had listed the bucket's items in another
        # order: no text read before matches, the state does.
        bucket = tree.root_id - tree.root_id % search.BUCKET
        text, = loader.cache._buckets[bucket]
        loader.cache._buckets[bucket] = {}
        shuffled = ";".join(reversed(text.split(";")))
        assert shuffled != text
        rows = [(bucket, len(text.split(";")), shuffled)]
        monkeypatch.setattr(search, "fetch", lambda *_args: list(rows))
        again, = loader.relevant_trees([classes["VCPU"]])
    assert again is tree
    assert loader.cache.bucket_trees(bucket, shuffled) == (tree,)


def test_trees_of_every_bucket_are_built_together(
        served: tuple[Any, Database], monkeypatch: pytest.MonkeyPatch) -> None:
    # A cold worker meets many buckets of changed trees; building them
    # bucket by bucket would read entries once per bucket.
    application, db = served
    _provider(application, HOST1, {"VCPU": 8})
    _provider(application, HOST2, {"VCPU": 4})
    _provider(application, FPGA_HOST, {"VCPU": 2})
    real_fetch = search.fetch
    builds: list[int] = []

    def one_bucket_per_tree(conn: Any, kind: str, params: Any) -> list[Any]:
        rows = real_fetch(conn, kind, params)
        if kind != "states":
            return rows
        items = [item for _bucket, _count, text in rows for item in text.split(";")]
        roots = sorted({int(item.split(" ")[0]) for item in items})
        return [(root, len(mine), ";".join(mine)) for root in roots
                if (mine := [i for i in items if int(i.split(" ")[0]) == root])]

    real_build = Loader._build

    def counted_build(self: Loader, states: list[Any], *args: Any) -> list[Any]:
        builds.append(len(states))
        return real_build(self, states, *args)

    monkeypatch.setattr(search, "fetch", one_bucket_per_tree)
    monkeypatch.setattr(Loader, "_build", counted_build)
    with db.reader() as conn:
        classes = search.check_names(conn, []).classes
        trees = _loader(conn, classes).relevant_trees([classes["VCPU"]])
    assert len(trees) == 3
    assert builds == [3]


def test_statements_prepared_at_start_are_those_of_the_connected_engine(
        served: tuple[Any, Database]) -> None:
    # A worker compiles the search's SQL before it connects, for the
    # dialect named by its URL; the engine's dialect, set up by connecting,
    # must write the same text.
    _application, db = served
    with db.reader() as conn:
        connected = conn.dialect
    fresh = sa.engine.make_url(db.url).get_dialect()()
    for kind, by in search._TEMPLATES:
        search._SQL.clear()
        prepared = search._template(fresh, kind, by)
        search._SQL.clear()
        assert search._template(connected, kind, by) == prepared


def test_an_empty_list_of_ids_matches_nothing(served: tuple[Any, Database]) -> None:
    application, db = served
    _provider(application, HOST1, {"VCPU": 8})
    with db.reader() as conn:
        assert search.fetch(conn, "usage", {"provider_ids": []}) == []
        assert search.fetch(conn, "entries", {"provider_ids": []}) == []
        assert search.fetch(conn, "states", {"root_ids": []}) == []


def test_a_bounded_search_reads_the_fitting_trees_a_page_at_a_time(
        served: tuple[Any, Database]) -> None:
    application, db = served
    # 40 hosts in uuid (and id) order; every third too small for 2 VCPU,
    # and only the last ten have the trait asked for, so a limited search
    # must go past the first pages of fitting trees to find any.
    hosts = ["b1d00000-0000-4000-8000-%012d" % (100 + n) for n in range(40)]
    for n, uuid in enumerate(hosts):
        _provider(application, uuid, {"VCPU": 1 if n % 3 == 0 else 4},
                  traits=("HW_CPU_X86_AVX2",) if n >= 30 else ())

    with db.reader() as conn:
        classes = search.check_names(conn, []).classes
        amounts = [(classes["VCPU"], 2)]
        loader = Loader(conn, classes, provider_cache.NOTHING)

        def roots(trees: list[Any]) -> list[str]:
            return [tree.providers[0].uuid for tree in trees]

        every = roots(loader.fitting_trees(amounts, 100))
        assert every == [uuid for n, uuid in enumerate(hosts) if n % 3]
        pages = loader.fitting_trees(amounts, 4)
        assert len(pages) == 4
        while True:
            page = loader.fitting_trees(amounts, 8, pages[-1].root_id)
            assert len(page) <= 8
            pages += page
            if len(page) < 8:
                break
        assert roots(pages) == every

    path = "/allocation_candidates?resources=VCPU:2&required=HW_CPU_X86_AVX2"
    unlimited = send(application, "GET", path).json
    limited = send(application, "GET", path + "&limit=3").json
    assert len(unlimited["allocation_requests"]) == 6
    assert limited["allocation_requests"] == unlimited["allocation_requests"][:3]


def test_the_names_query_tells_whether_sharing_providers_hold_a_class(
        served: tuple[Any, Database]) -> None:
    application, db = served
    _provider(application, HOST1, {"VCPU": 8, "DISK_GB": 100})
    with db.reader() as conn:
        names = search.check_names(conn, ["HW_CPU_X86_AVX2"], ["DISK_GB"])
        assert names.shared is False
        assert names.traits == {"HW_CPU_X86_AVX2": names.traits["HW_CPU_X86_AVX2"]}
        # Not asked: not told.
        assert search.check_names(conn, []).shared is None

    _provider(application, DISKS, {"DISK_GB": 1000},
              traits=("MISC_SHARES_VIA_AGGREGATE",))
    with db.reader() as conn:
        assert search.check_names(conn, [], ["DISK_GB"]).shared is True
        assert search.check_names(conn, [], ["VCPU", "DISK_GB"]).shared is True
        # A sharing provider of other classes does not count.
        assert search.check_names(conn, [], ["VCPU"]).shared is False
        # Nor a class nobody knows.
        assert search.check_names(conn, [], ["CUSTOM_NOPE"]).shared is False


def _ungrouped(rows: list[tuple[Any, ...]]) -> tuple[list[Any], list[Any]]:
    """TREES_ENTRIES rows as ``entries`` rows (one per provider) and usage
    rows."""
    entries, usage = [], []
    for row in rows:
        if row[search.ENTRY_PROVIDERS] is None:
            assert row[3:] == (None,) * 7
            usage.append((-row[0], row[1], row[2]))
            continue
        entries += [(provider_id, *row[:search.ENTRY_COUNT]) for provider_id in
                    search.provider_ids(row[search.ENTRY_COUNT], row[search.ENTRY_PROVIDERS])]
    return entries, usage


def test_entries_and_usage_of_whole_trees_in_one_read(
        served: tuple[Any, Database]) -> None:
    # A worker's first search reads the entries of whole trees, each
    # distinct row once with the providers having it, and their usage in
    # one statement: the rows must be those read one per provider, the
    # usage's under negated provider ids.
    application, db = served
    _provider(application, HOST1, {"DISK_GB": 100}, traits=("HW_CPU_X86_AVX2",))
    _provider(application, NUMA1, {"VCPU": 8, "MEMORY_MB": 512}, parent=HOST1)
    _provider(application, HOST2, {"VCPU": 8, "MEMORY_MB": 512},
              traits=("HW_CPU_X86_AVX2",))
    _provider(application, DISKS, {"DISK_GB": 100})
    consumer = "b1d00000-0000-4000-8000-0000000000c1"
    assert send(application, "PUT", "/allocations/%s" % consumer, {
        "allocations": {NUMA1: {"resources": {"VCPU": 2, "MEMORY_MB": 256}},
                        HOST1: {"resources": {"DISK_GB": 10}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }).status_int == 204
    with db.reader() as conn:
        ids = dict(conn.execute(sa.text("SELECT uuid, id FROM resource_providers")).all())
        roots = sorted({ids[HOST1], ids[HOST2]})
        read = search.fetch(conn, search.TREES_ENTRIES, {"root_ids": roots})
        entries, usage = _ungrouped(read)
        assert sorted(entries) == sorted(search.fetch(
            conn, "entries", {"provider_ids": [ids[HOST1], ids[NUMA1], ids[HOST2]]}))
        assert sorted(usage) == sorted(search.fetch(
            conn, "usage", {"provider_ids": sorted(ids.values())}))
        assert len(usage) == 3
        # Like rows come once: VCPU and MEMORY_MB (NUMA1's and HOST2's
        # alike), DISK_GB, and the trait HOST1 and HOST2 both have.
        assert len(read) == 4 + len(usage)
        assert search.fetch(conn, search.TREES_ENTRIES, {"root_ids": []}) == []
        # Of everyone: every provider's entries, no usage.
        everyone, no_usage = _ungrouped(search.fetch(
            conn, search.TREES_ENTRIES, {search.EVERYONE: []}))
        assert sorted(everyone) == sorted(search.fetch(
            conn, "entries", {"provider_ids": sorted(ids.values())}))
        assert no_usage == []


@pytest.mark.parametrize("count, text", [
    (3, "4 7"),      # fewer ids than counted
    (2, "4 7 9"),    # more
    (3, "4 7 "),     # cut after a separator
])
def test_provider_ids_cut_short_are_refused(count: int, text: str) -> None:
    assert search.provider_ids(2, "4 7") == [4, 7]
    with pytest.raises(RuntimeError, match="entries of some providers was read cut short"):
        search.provider_ids(count, text)


def test_entries_of_some_providers_and_usage_of_others_in_one_read(
        served: tuple[Any, Database]) -> None:
    # After a claim a search reads the claimed provider's entry and usage,
    # and the usage alone of providers that only lost allocations: one
    # statement, each list its own.
    application, db = served
    _provider(application, HOST1, {"VCPU": 8, "MEMORY_MB": 512},
              traits=("HW_CPU_X86_AVX2",))
    _provider(application, HOST2, {"VCPU": 4})
    for host, consumer in ((HOST1, ADDRESSES), (HOST2, AGGREGATE)):
        assert send(application, "PUT", "/allocations/%s" % consumer, {
            "allocations": {host: {"resources": {"VCPU": 2}}},
            "project_id": "p", "user_id": "u", "consumer_generation": None,
            "consumer_type": "INSTANCE",
        }).status_int == 204
    with db.reader() as conn:
        ids = dict(conn.execute(sa.text("SELECT uuid, id FROM resource_providers")).all())
        one, two = ids[HOST1], ids[HOST2]
        rows = search.fetch(conn, search.ENTRIES_AND_USAGE,
                            {"provider_ids": [one], search.USAGE_OF: [two]})
        assert sorted(row for row in rows if row[0] > 0) == sorted(
            search.fetch(conn, "entries", {"provider_ids": [one]}))
        assert [(-row[0], row[1], row[2]) for row in rows if row[0] < 0] == search.fetch(
            conn, "usage", {"provider_ids": [two]})
        assert search.fetch(conn, search.ENTRIES_AND_USAGE,
                            {"provider_ids": [], search.USAGE_OF: []}) == []


def test_a_first_search_reads_usage_with_the_entries_of_whole_trees(
        served: tuple[Any, Database], monkeypatch: pytest.MonkeyPatch) -> None:
    # With nothing kept and enough providers, a search reads whole trees'
    # entries and usage in one statement: the trees built must be the
    # ones read by provider ids, in two statements.
    from placement.objects.candidates import loader as loader_module
    application, db = served
    _provider(application, HOST1, {"DISK_GB": 100})
    _provider(application, NUMA1, {"VCPU": 8, "MEMORY_MB": 512}, parent=HOST1)
    _provider(application, HOST2, {"VCPU": 4, "MEMORY_MB": 512})
    assert send(application, "PUT", "/allocations/%s" % ADDRESSES, {
        "allocations": {NUMA1: {"resources": {"VCPU": 3, "MEMORY_MB": 128}},
                        HOST1: {"resources": {"DISK_GB": 7}}},
        "project_id": AGGREGATE, "user_id": AGGREGATE,
        "consumer_generation": None, "consumer_type": "INSTANCE"},
    ).status_int == 204
    fetched: list[tuple[str, str]] = []
    real_fetch = search.fetch

    def fetch(conn: Any, kind: str, params: Any) -> Any:
        fetched.append((kind, next(iter(params))))
        return real_fetch(conn, kind, params)

    monkeypatch.setattr(search, "fetch", fetch)

    def shapes(read_by_trees: int) -> dict[str, Any]:
        monkeypatch.setattr(loader_module, "READ_BY_TREES", read_by_trees)
        with db.reader() as conn:
            classes = search.check_names(conn, []).classes
            trees = Loader(conn, classes, provider_cache.NOTHING).relevant_trees(
                [classes["VCPU"]])
        return _shape(Forest(trees)) | {
            p.uuid + " used": sorted((name, inv.used) for name, inv in p.inventories.items())
            for tree in trees for p in tree.providers}

    by_provider = shapes(10_000)
    assert fetched == [("states", "class_ids"), (search.ENTRIES_AND_USAGE, "provider_ids")]
    fetched.clear()
    together = shapes(1)
    assert fetched == [("states", "class_ids"), (search.TREES_ENTRIES, "root_ids")]
    fetched.clear()
    # Apart: entries and usage in two statements, as when the usage's
    # providers are too many to go with the entries.
    monkeypatch.setattr(search, "CHUNK", 1)
    apart = shapes(10_000)
    assert fetched == [("states", "class_ids")] + [("entries", "provider_ids")] * 3 + [
        ("usage", "provider_ids")] * 3
    assert by_provider == apart
    assert together == apart
    assert apart[NUMA1 + " used"] == [("MEMORY_MB", 128), ("VCPU", 3)]
    assert apart[HOST1 + " used"] == [("DISK_GB", 7)]
