"""noauth2, the keystone adapters and the body size limit, each around a
tiny WSGI application that shows what it received."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import webob

from placement.context import RequestContext
from placement.middleware import body_size, keystone, noauth
from placement.middleware.errors import REQUEST_ID_ENVIRON, VERSION_ENVIRON
from tests.functional import fixtures


def _echo(seen: dict[str, Any]):  # type: ignore[no-untyped-def]
    def app(environ: dict[str, Any], start_response: Any) -> Any:
        seen.update(environ)
        seen["body"] = webob.Request(environ).body  # read it as handlers do
        return webob.Response(json_body={"ok": True})(environ, start_response)
    return app


def _noauth(seen: dict[str, Any]) -> noauth.NoAuthMiddleware:
    return noauth.NoAuthMiddleware(_echo(seen),
                                   lambda environ: environ["PATH_INFO"] == "/")


def _get(app: Any, path: str = "/resource_providers", **headers: str
         ) -> webob.Response:
    req = webob.Request.blank(path, headers=headers)
    req.environ[REQUEST_ID_ENVIRON] = "req-test"
    req.environ[VERSION_ENVIRON] = (1, 30)
    return req.get_response(app)


def _context(seen: dict[str, Any]) -> RequestContext:
    return RequestContext.from_environ(seen, overwrite=False, config=None, db=None)


@pytest.mark.parametrize("headers,user,project,roles,system", [
    # The token names the user and, after a colon, the project.
    ({"X-Auth-Token": "alice:proj1"}, "alice", "proj1", [], None),
    ({"X-Auth-Token": "bob"}, "bob", "bob", [], None),
    # The admin user is an admin when no roles are sent ...
    ({"X-Auth-Token": "admin"}, "admin", "admin", ["admin"], None),
    # ... and has exactly the roles sent otherwise.
    ({"X-Auth-Token": "admin", "X-Roles": "reader"}, "admin", "admin",
     ["reader"], None),
    ({"X-Auth-Token": "carol", "X-Roles": "admin,member,reader"}, "carol",
     "carol", ["admin", "member", "reader"], None),
    # A project sent in X-Project-Id wins over the token's.
    ({"X-Auth-Token": "dave:proj1", "X-Project-Id": "proj2"}, "dave", "proj2",
     [], None),
    # A system-scoped token has no project from the token.
    ({"X-Auth-Token": "erin", "X-Roles": "admin",
      "OpenStack-System-Scope": "all"}, "erin", None, ["admin"], "all"),
])
def test_noauth_identity(headers: dict[str, str], user: str,
                         project: str | None, roles: list[str],
                         system: str | None) -> None:
    seen: dict[str, Any] = {}
    assert _get(_noauth(seen), **headers).status_int == 200
    ctx = _context(seen)
    assert ctx.user_id == user
    assert ctx.project_id == project
    assert ctx.roles == roles
    assert ctx.system_scope == system


def test_noauth_without_a_token_is_401() -> None:
    seen: dict[str, Any] = {}
    resp = _get(_noauth(seen))
    assert resp.status_int == 401
    # webob's own body, as Placement's noauth2 sends it.
    assert json.loads(resp.body) == {
        "code": "401 Unauthorized", "title": "Unauthorized",
        "message": "This server could not verify that you are authorized to "
        "access the document you requested. Either you supplied the wrong "
        "credentials (e.g., bad password), or your browser does not "
        "understand how to supply the credentials required.<br /><br />\n\n\n"}
    assert not seen


def test_noauth_empty_token_is_a_nameless_user_without_roles() -> None:
    # As Placement's noauth2: the header is there, so the caller passes,
    # and policy refuses a user with no roles.
    seen: dict[str, Any] = {}
    assert _get(_noauth(seen), **{"X-Auth-Token": ""}).status_int == 200
    ctx = _context(seen)
    assert (ctx.user_id, ctx.roles) == ("", [])


def test_noauth_public_path_needs_no_token() -> None:
    seen: dict[str, Any] = {}
    assert _get(_noauth(seen), "/").status_int == 200
    assert "HTTP_X_USER_ID" not in seen


def test_require_identity_refuses_an_anonymous_request() -> None:
    seen: dict[str, Any] = {}
    app = keystone.RequireIdentity(_echo(seen))
    resp = _get(app, **{"X-Identity-Status": "Invalid"})
    assert resp.status_int == 401
    assert json.loads(resp.body)["errors"][0]["title"] == "Unauthorized"
    assert not seen
    assert _get(app, **{"X-User-Id": "someone"}).status_int == 200


def test_public_path_bypass() -> None:
    inner: dict[str, Any] = {}
    outer: dict[str, Any] = {}
    app = keystone.PublicPathBypass(_echo(outer), _echo(inner),
                                    lambda environ: environ["PATH_INFO"] == "/")
    _get(app, "/")
    assert inner and not outer
    inner.clear()
    _get(app, "/resource_providers")
    assert outer and not inner


def _limited(limit: int, seen: dict[str, Any]) -> body_size.BodySizeLimit:
    conf = fixtures.make_conf("sqlite://",
                              oslo_middleware={"max_request_body_size": limit})
    try:
        return body_size.BodySizeLimit(_echo(seen), conf)
    finally:
        conf.reset()


def _post(app: Any, body: bytes, chunked: bool = False) -> webob.Response:
    req = webob.Request.blank("/resource_providers", method="POST")
    req.environ[REQUEST_ID_ENVIRON] = "req-test"
    req.environ[VERSION_ENVIRON] = (1, 30)
    req.content_type = "application/json"
    if chunked:
        req.environ["wsgi.input"] = io.BytesIO(body)
        req.environ.pop("CONTENT_LENGTH", None)
        req.environ["HTTP_TRANSFER_ENCODING"] = "chunked"
        req.environ["wsgi.input_terminated"] = True  # as gunicorn sets it
    else:
        req.body = body
    return req.get_response(app)


@pytest.mark.parametrize("chunked", [False, True])
def test_body_within_the_limit_is_served(chunked: bool) -> None:
    seen: dict[str, Any] = {}
    resp = _post(_limited(64, seen), b"x" * 64, chunked)
    assert resp.status_int == 200
    assert seen


@pytest.mark.parametrize("chunked", [False, True])
def test_body_over_the_limit_is_a_json_413(chunked: bool) -> None:
    seen: dict[str, Any] = {}
    resp = _post(_limited(64, seen), b"x" * 65, chunked)
    assert resp.status_int == 413
    error = json.loads(resp.body)["errors"][0]
    assert error["title"] == "Request Entity Too Large"
    assert "max_request_body_size (64)" in error["detail"]
    assert error["code"] == "placement.undefined_code"
    assert resp.headers["OpenStack-API-Version"] == "placement 1.30"
    # A declared length is refused before the application is called.
    assert bool(seen) is chunked
