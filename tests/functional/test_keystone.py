"""``auth_strategy = keystone`` against a fake identity service.

keystonemiddleware's auth_token, configured from ``[keystone_authtoken]``
in a placement.conf as an operator would, talks over real HTTP to the fake
keystone of ``fake_keystone``; placement is called in-process.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterator

import pytest
import webob

from placement import app
from placement.baremetal import app as baremetal_app
from placement.db import migration
from placement.db.api import Database
from tests import backends
from tests.functional import fake_keystone
from tests.functional.fake_keystone import (
    ADMIN_TOKEN,
    MEMBER_TOKEN,
    OTHER_PROJECT,
    PROJECT,
    READER_TOKEN,
    SERVICE_PASSWORD,
    SERVICE_TOKEN,
    SYSTEM_ADMIN_TOKEN,
    FakeKeystone,
)


@pytest.fixture(scope="module")
def keystone() -> Iterator[FakeKeystone]:
    server = FakeKeystone()
    server.tokens[ADMIN_TOKEN] = server.token(["admin", "member", "reader"])
    server.tokens[MEMBER_TOKEN] = server.token(["member", "reader"])
    server.tokens[READER_TOKEN] = server.token(["reader"])
    server.tokens[SYSTEM_ADMIN_TOKEN] = server.token(
        ["admin", "member", "reader"], system=True)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    with backends.fresh_database("sqlite") as url:
        yield url


def _app(database: str, keystone: FakeKeystone, build: Any = app.build_app,
         **authtoken: Any) -> Any:
    conf = fake_keystone.placement_conf_for(
        os.path.dirname(database.split("///", 1)[1]), database, keystone.url,
        **authtoken)
    db = Database(conf)
    migration.upgrade(db)
    return build(conf, db)


@pytest.fixture(scope="module")
def placement(database: str, keystone: FakeKeystone,
              ) -> Any:
    return _app(database, keystone)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # requests must talk to the fake keystone directly.
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def call(application: Any, path: str, token: str | None = None,
         **headers: str) -> webob.Response:
    req = webob.Request.blank(path, headers=headers)
    req.headers["Accept"] = "application/json"
    if token is not None:
        req.headers["X-Auth-Token"] = token
    return req.get_response(application)


def test_root_needs_no_token(placement: Any) -> None:
    resp = call(placement, "/")
    assert resp.status_int == 200
    assert resp.json["versions"][0]["id"] == "v1.0"


def test_no_token_is_401_with_www_authenticate(
        placement: Any, keystone: FakeKeystone) -> None:
    resp = call(placement, "/resource_providers")
    assert resp.status_int == 401
    assert resp.headers["WWW-Authenticate"] == 'Keystone uri="%s"' % keystone.url


def test_invalid_token_is_401_with_www_authenticate(
        placement: Any, keystone: FakeKeystone) -> None:
    resp = call(placement, "/resource_providers", token="not-a-token")
    assert resp.status_int == 401
    assert resp.headers["WWW-Authenticate"] == 'Keystone uri="%s"' % keystone.url
    # keystone was asked, with the service's own token.
    validations = [r for r in keystone.requests
                   if r[0] == "GET" and r[1].endswith("/v3/auth/tokens")
                   and r[2].get("X-Subject-Token") == "not-a-token"]
    assert validations
    assert validations[-1][2]["X-Auth-Token"] == SERVICE_TOKEN


def test_valid_admin_token_is_served(
        placement: Any, keystone: FakeKeystone) -> None:
    resp = call(placement, "/resource_providers", token=ADMIN_TOKEN)
    assert resp.status_int == 200, resp.body
    assert resp.json == {"resource_providers": []}
    # The service logged in with the configured credentials.
    logins = [json.loads(r[3]) for r in keystone.requests if r[0] == "POST"]
    assert logins
    user = logins[0]["auth"]["identity"]["password"]["user"]
    assert user["name"] == "placement"
    assert user["password"] == SERVICE_PASSWORD


def test_keystone_roles_feed_policy(placement: Any) -> None:
    resp = call(placement, "/resource_providers", token=MEMBER_TOKEN)
    assert resp.status_int == 403
    assert "placement:resource_providers:list" in resp.json["errors"][0]["detail"]


def test_identity_headers_from_the_client_are_not_trusted(placement: Any) -> None:
    # auth_token replaces whatever identity headers the client sent.
    resp = call(placement, "/resource_providers", token=MEMBER_TOKEN,
                **{"X-Roles": "admin", "X-Project-Id": OTHER_PROJECT,
                   "X-User-Id": "admin", "X-Identity-Status": "Confirmed"})
    assert resp.status_int == 403


def test_system_scoped_token_is_refused(placement: Any) -> None:
    resp = call(placement, "/resource_providers", token=SYSTEM_ADMIN_TOKEN)
    assert resp.status_int == 403


def test_project_comes_from_the_token(placement: Any) -> None:
    headers = {"OpenStack-API-Version": "placement 1.9"}
    own = call(placement, "/usages?project_id=" + PROJECT, token=READER_TOKEN,
               **headers)
    assert own.status_int == 200, own.body
    assert own.json == {"usages": {}}
    other = call(placement, "/usages?project_id=" + OTHER_PROJECT,
                 token=READER_TOKEN, **headers)
    assert other.status_int == 403


def test_write_with_a_valid_token(placement: Any) -> None:
    req = webob.Request.blank("/resource_providers", method="POST",
                              headers={"X-Auth-Token": ADMIN_TOKEN,
                                       "Content-Type": "application/json",
                                       "OpenStack-API-Version": "placement 1.20"})
    req.body = json.dumps({"name": "keystone-made"}).encode()
    resp = req.get_response(placement)
    assert resp.status_int == 200, resp.body
    assert resp.json["name"] == "keystone-made"


def test_delayed_decision_still_refuses_anonymous_requests(
        database: str, keystone: FakeKeystone) -> None:
    # With delay_auth_decision auth_token lets an invalid token through
    # marked Invalid; placement itself must then refuse it.
    application = _app(database, keystone, delay_auth_decision=True)
    resp = call(application, "/resource_providers", token="not-a-token")
    assert resp.status_int == 401
    assert resp.headers["WWW-Authenticate"] == 'Keystone uri="%s"' % keystone.url
    assert resp.json["errors"][0]["title"] == "Unauthorized"
    resp = call(application, "/resource_providers", token=ADMIN_TOKEN)
    assert resp.status_int == 200
    assert call(application, "/").status_int == 200


# The bare-metal API (Ironic's /v1/allocations) behind the same
# keystonemiddleware: the same tokens, roles and projects; Ironic's error
# format for what policy refuses.

BAREMETAL_VERSION = {"X-OpenStack-Ironic-API-Version": "1.60"}


@pytest.fixture(scope="module")
def baremetal(database: str, keystone: FakeKeystone, placement: Any) -> Any:
    # One free node of CUSTOM_BM_KEYSTONE, made through the Placement API.
    send(placement, "PUT", "/resource_classes/CUSTOM_BM_KEYSTONE", ADMIN_TOKEN)
    node = send(placement, "POST", "/resource_providers", ADMIN_TOKEN,
                {"name": "keystone-node"}).json
    send(placement, "PUT", "/resource_providers/%s/inventories" % node["uuid"],
         ADMIN_TOKEN, {"resource_provider_generation": 0,
                       "inventories": {"CUSTOM_BM_KEYSTONE": {"total": 1}}})
    return _app(database, keystone, build=baremetal_app.build_app)


def send(application: Any, method: str, path: str, token: str | None,
         body: Any = None, **headers: str) -> webob.Response:
    req = webob.Request.blank(path, method=method, headers=headers)
    req.headers["Accept"] = "application/json"
    req.headers.setdefault("OpenStack-API-Version", "placement 1.20")
    if token is not None:
        req.headers["X-Auth-Token"] = token
    if body is not None:
        req.content_type = "application/json"
        req.body = json.dumps(body).encode()
    return req.get_response(application)


def test_baremetal_version_documents_need_no_token(baremetal: Any) -> None:
    assert call(baremetal, "/").status_int == 200
    assert call(baremetal, "/v1", **BAREMETAL_VERSION).status_int == 200


def test_baremetal_without_a_valid_token_is_401(
        baremetal: Any, keystone: FakeKeystone) -> None:
    for token in (None, "not-a-token"):
        resp = call(baremetal, "/v1/allocations", token=token, **BAREMETAL_VERSION)
        assert resp.status_int == 401
        assert resp.headers["WWW-Authenticate"] == 'Keystone uri="%s"' % keystone.url


def test_baremetal_member_allocates_for_its_own_project(baremetal: Any) -> None:
    refused = send(baremetal, "POST", "/v1/allocations", MEMBER_TOKEN,
                   {"resource_class": "bm-keystone", "owner": OTHER_PROJECT},
                   **BAREMETAL_VERSION)
    assert refused.status_int == 403
    fault = json.loads(refused.json["error_message"])
    assert "baremetal:allocation:create_restricted" in fault["faultstring"]

    made = send(baremetal, "POST", "/v1/allocations", MEMBER_TOKEN,
                {"resource_class": "bm-keystone"}, **BAREMETAL_VERSION)
    assert made.status_int == 201, made.body
    assert (made.json["owner"], made.json["state"]) == (PROJECT, "active")

    listed = send(baremetal, "GET", "/v1/allocations", READER_TOKEN,
                  **BAREMETAL_VERSION)
    assert [a["uuid"] for a in listed.json["allocations"]] == [made.json["uuid"]]
    # The reader may look but not let go.
    path = "/v1/allocations/" + made.json["uuid"]
    assert send(baremetal, "DELETE", path, READER_TOKEN,
                **BAREMETAL_VERSION).status_int == 403
    assert send(baremetal, "DELETE", path, MEMBER_TOKEN,
                **BAREMETAL_VERSION).status_int == 204

