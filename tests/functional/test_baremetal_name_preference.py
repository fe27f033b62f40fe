"""The node named like the allocation is tried first from Ironic API 1.79.

Twenty free nodes; ten allocations named after ten of them.  At 1.79 each
must get its namesake: a random pick would do so once in 20!/10!
(about 1.5e12) runs.  At 1.78 the name means nothing: ten more
allocations named after the ten nodes left would all get their namesakes
once in 10! (about 3.6e6) runs, so at least one of them must not.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import webob

from placement import app
from placement.baremetal import app as baremetal_app
from tests.functional import inprocess

NODES = 20
NAMED = 10
PLACEMENT_CLASS = "CUSTOM_BM_NAMED"


def _allocate(application: Any, name: str, version: str) -> dict[str, Any]:
    req = webob.Request.blank("/v1/allocations", method="POST")
    req.headers["X-Auth-Token"] = "admin"
    req.headers["X-OpenStack-Ironic-API-Version"] = version
    req.content_type = "application/json"
    req.body = json.dumps({"resource_class": "bm-named", "name": name}).encode()
    resp = req.get_response(application)
    assert resp.status_int == 201, resp.body
    body: dict[str, Any] = resp.json
    assert body["state"] == "active", body
    return body


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mysql"])
def test_the_namesake_node_first_from_1_79(backend: str) -> None:
    with inprocess.migrated(backend) as (conf, db):
        _check_preference(app.build_app(conf, db), baremetal_app.build_app(conf, db))


def _check_preference(placement: Any, baremetal: Any) -> None:
    assert inprocess.send(placement, "PUT",
                          "/resource_classes/" + PLACEMENT_CLASS).status_int == 201
    node_of: dict[str, str] = {}
    for number in range(NODES):
        name = "node-%02d" % number
        provider = inprocess.send(placement, "POST", "/resource_providers",
                                  {"name": name}).json
        assert inprocess.send(
            placement, "PUT", "/resource_providers/%s/inventories" % provider["uuid"],
            {"resource_provider_generation": 0,
             "inventories": {PLACEMENT_CLASS: {"total": 1}}}).status_int == 200
        node_of[name] = provider["uuid"]
    names = sorted(node_of)

    for name in names[:NAMED]:
        assert _allocate(baremetal, name, "1.79")["node_uuid"] == node_of[name]

    given = {name: _allocate(baremetal, name, "1.78")["node_uuid"]
             for name in names[NAMED:]}
    assert sorted(given.values()) == sorted(node_of[name] for name in names[NAMED:])
    assert any(given[name] != node_of[name] for name in given), given
