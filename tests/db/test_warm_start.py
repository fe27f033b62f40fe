"""A worker reads every tree as it starts, on a small enough deployment
(placement.app.warm): its first search then
finds the trees and their summaries kept, and answers as a worker keeping
nothing does, before and after the trees change."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from placement import app
from placement import kept as kept_store
from placement.db.api import Database
from placement.objects import candidates
from tests.functional import inprocess
from tests.functional.inprocess import send

HOST1 = "3a1e0000-0000-4000-8000-000000000001"
NUMA1 = "3a1e0000-0000-4000-8000-0000000000a1"
HOST2 = "3a1e0000-0000-4000-8000-000000000002"
DISKS = "3a1e0000-0000-4000-8000-0000000000d5"
CONSUMER = "3a1e0000-0000-4000-8000-0000000000c1"
QUERY = ("/allocation_candidates?resources=VCPU:1,MEMORY_MB:64"
         "&resources1=DISK_GB:10&group_policy=none")


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def deployment(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any, Database]]:
    """A deployment of two hosts (one with a NUMA cell) and a disk pool
    sharing with the first: the application serving it, one keeping
    nothing, and their database."""
    with inprocess.migrated(request.param) as (conf, db):
        # Made through an application keeping nothing: the worker's store
        # is empty when it starts, as a fresh worker's is.
        keeping_nothing = app.build_app(conf, db, kept=kept_store.NOTHING)
        _provider(keeping_nothing, HOST1, {"MEMORY_MB": 2048})
        _provider(keeping_nothing, NUMA1, {"VCPU": 8, "MEMORY_MB": 1024}, parent=HOST1)
        _provider(keeping_nothing, HOST2, {"VCPU": 4, "MEMORY_MB": 512, "DISK_GB": 100})
        _provider(keeping_nothing, DISKS, {"DISK_GB": 1000},
                  traits=["MISC_SHARES_VIA_AGGREGATE"])
        for uuid in (HOST1, DISKS):
            assert send(keeping_nothing, "PUT", "/resource_providers/%s/aggregates" % uuid,
                        [HOST1], version="1.1").status_int == 200
        yield app.build_app(conf, db), keeping_nothing, db


def _provider(application: Any, uuid: str, inventories: dict[str, int],
              parent: str | None = None, traits: list[str] | None = None) -> None:
    body: dict[str, Any] = {"uuid": uuid, "name": uuid}
    if parent:
        body["parent_provider_uuid"] = parent
    assert send(application, "POST", "/resource_providers", body).status_int == 200
    path = "/resource_providers/%s" % uuid
    assert send(application, "PUT", path + "/inventories", {
        "resource_provider_generation": 0,
        "inventories": {name: {"total": total} for name, total in inventories.items()},
    }).status_int == 200
    if traits:
        assert send(application, "PUT", path + "/traits", {
            "resource_provider_generation": 1, "traits": traits,
        }).status_int == 200


def _start(db: Database) -> kept_store.Kept:
    with db.engine.connect() as conn:
        app.warm(conn)
    return kept_store.of(db.engine)


def _answers_alike(served: Any, keeping_nothing: Any, version: str) -> bytes:
    answer = send(served, "GET", QUERY, version=version)
    assert answer.status_int == 200
    assert answer.body == send(keeping_nothing, "GET", QUERY, version=version).body
    return answer.body


def test_a_started_worker_holds_every_tree_and_its_summaries(
        deployment: tuple[Any, Any, Database]) -> None:
    served, keeping_nothing, db = deployment
    kept = _start(db)
    assert len(kept.trees) == 3
    assert all(tree.summaries is not None for tree in kept.trees.values())
    held = dict(kept.trees)
    built_before = kept.counts["rebuild", "tree"]
    body = _answers_alike(served, keeping_nothing, "1.39")
    assert HOST1.encode() in body and DISKS.encode() in body
    # The first search built no tree: every one was read at start.
    assert kept.counts["rebuild", "tree"] == built_before
    assert kept.trees == held
    # Summaries before 1.29 are not the kept texts; they answer alike too.
    _answers_alike(served, keeping_nothing, "1.28")


def test_what_changes_after_the_start_is_read_again(
        deployment: tuple[Any, Any, Database]) -> None:
    served, keeping_nothing, db = deployment
    kept = _start(db)
    host2_tree = next(tree for tree in kept.trees.values()
                      if tree.providers[0].uuid == HOST2)
    assert send(served, "PUT", "/allocations/%s" % CONSUMER, {
        "allocations": {HOST2: {"resources": {"VCPU": 3, "DISK_GB": 50}}},
        "project_id": CONSUMER, "user_id": CONSUMER,
        "consumer_generation": None}, version="1.28").status_int == 204
    assert b'"used": 3' in _answers_alike(served, keeping_nothing, "1.39")
    assert kept.trees[host2_tree.root_id] is not host2_tree


def test_a_bigger_deployment_is_not_read_at_start(
        deployment: tuple[Any, Any, Database], monkeypatch: pytest.MonkeyPatch) -> None:
    served, keeping_nothing, db = deployment
    monkeypatch.setattr(candidates, "WARM_PROVIDERS", 3)
    kept = _start(db)
    assert kept.trees == {} and len(kept.texts) == 0
    _answers_alike(served, keeping_nothing, "1.39")


def test_a_started_worker_reads_every_state_for_classes_most_trees_hold(
        deployment: tuple[Any, Any, Database]) -> None:
    # Every tree holds MEMORY_MB or DISK_GB, one holds FPGA: a first
    # search for the former reads every tree's state rather than asking
    # the database for those holding the classes, as later searches do.
    _served, _keeping_nothing, db = deployment
    assert not kept_store.of(db.engine).reads_everyone(frozenset({"MEMORY_MB"}))
    kept = _start(db)
    assert kept.reads_everyone(frozenset({"MEMORY_MB", "DISK_GB"}))
    assert not kept.reads_everyone(frozenset({"FPGA"}))
    # A search for the classes tells how far they reach from then on.
    kept.reached(frozenset({"MEMORY_MB", "DISK_GB"}), 1)
    assert not kept.reads_everyone(frozenset({"MEMORY_MB", "DISK_GB"}))
