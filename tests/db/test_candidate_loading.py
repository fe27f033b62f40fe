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

from placement.db.api import Database
from placement.objects.candidates import cache as provider_cache
from placement.objects.candidates import search
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
        classes, _traits = search.check_names(conn, [])
        cache = provider_cache.of(conn.engine)
        vcpu = frozenset({"VCPU"})
        assert not cache.reads_everyone(vcpu)
        narrowed = search.load_forest(conn, classes, [classes["VCPU"]], True)
        # The VCPU trees held every provider read so far: read everyone next.
        assert cache.reads_everyone(vcpu)
        everyone = search.load_forest(conn, classes, [classes["VCPU"]], True)
        assert _shape(everyone) == _shape(narrowed)
        assert set(_shape(everyone)) == {HOST1, NUMA1, HOST2}
        assert everyone.anchors == {}
        assert everyone.trees == narrowed.trees

        # FPGA trees hold a small share of the providers read by now.
        search.load_forest(conn, classes, [classes["FPGA"]], False)
        assert not cache.reads_everyone(frozenset({"FPGA"}))


def test_a_class_created_after_the_names_were_read_is_named(
        served: tuple[Any, Database]) -> None:
    # A search reads the class names first; a writer may then add a class,
    # with inventory of it, before the search reads that inventory.
    application, db = served
    with db.reader() as conn:
        classes, _traits = search.check_names(conn, [])
    assert send(application, "PUT", "/resource_classes/CUSTOM_LATE").status_int == 201
    _provider(application, HOST1, {"VCPU": 4, "CUSTOM_LATE": 2})
    with db.reader() as conn:
        forest = search.load_forest(conn, classes, [classes["VCPU"]], False)
    inventories = _shape(forest)[HOST1][1]
    assert set(inventories) == {"VCPU", "CUSTOM_LATE"}
    assert inventories["CUSTOM_LATE"].total == 2
