"""The foundation middleware, each on its own around a tiny WSGI app."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import webob
from oslo_db import exception as db_exc

from placement import errors
from placement.middleware import fault, microversion, noauth, request_log
from placement.middleware.errors import REQUEST_ID_ENVIRON, VERSION_ENVIRON


def _ok(environ: dict[str, Any], start_response: Any) -> Any:
    return webob.Response(json_body={"seen": environ.get("HTTP_X_USER_ID")})(
        environ, start_response)


def _raising(exc: BaseException):  # type: ignore[no-untyped-def]
    def app(environ: dict[str, Any], start_response: Any) -> Any:
        raise exc
    return app


def _request(path: str = "/resource_providers", **environ: Any) -> webob.Request:
    req = webob.Request.blank(path)
    req.environ[REQUEST_ID_ENVIRON] = "req-test"
    req.environ.update(environ)
    return req


class TestFaultWrapper:
    def test_unexpected_exception_is_a_json_500_without_traceback(
            self, caplog: pytest.LogCaptureFixture) -> None:
        app = fault.FaultWrapper(_raising(RuntimeError("secret internals")))
        with caplog.at_level(logging.ERROR):
            resp = _request(**{VERSION_ENVIRON: (1, 30)}).get_response(app)
        assert resp.status_int == 500
        assert resp.content_type == "application/json"
        error = json.loads(resp.body)["errors"][0]
        assert error["status"] == 500
        assert error["request_id"] == "req-test"
        assert error["code"] == errors.DEFAULT
        assert "secret internals" not in resp.text
        assert "Traceback" not in resp.text
        assert resp.headers["OpenStack-API-Version"] == "placement 1.30"
        # The traceback goes to the log instead.
        assert any(record.exc_info and "secret internals" in str(record.exc_info[1])
                   for record in caplog.records)

    def test_database_down_is_a_503(self) -> None:
        app = fault.FaultWrapper(_raising(db_exc.DBConnectionError("gone")))
        resp = _request().get_response(app)
        assert resp.status_int == 503
        error = json.loads(resp.body)["errors"][0]
        assert error["title"] == "Service Unavailable"
        assert error["request_id"] == "req-test"

    def test_api_error_keeps_its_status(self) -> None:
        app = fault.FaultWrapper(_raising(errors.Conflict("nope")))
        resp = _request().get_response(app)
        assert resp.status_int == 409

    def test_success_passes_through(self) -> None:
        resp = _request().get_response(fault.FaultWrapper(_ok))
        assert resp.status_int == 200


class TestMicroversionMiddleware:
    def test_success_carries_version_headers(self) -> None:
        req = _request(HTTP_OPENSTACK_API_VERSION="placement 1.12")
        resp = req.get_response(microversion.MicroversionMiddleware(_ok))
        assert resp.headers["OpenStack-API-Version"] == "placement 1.12"
        assert resp.headers["Vary"] == "openstack-api-version"
        assert req.environ[VERSION_ENVIRON] == (1, 12)

    def test_errors_from_inside_carry_version_headers(self) -> None:
        inner = fault.FaultWrapper(_raising(errors.NotFound("no")))
        req = _request(HTTP_OPENSTACK_API_VERSION="placement 1.23")
        resp = req.get_response(microversion.MicroversionMiddleware(inner))
        assert resp.status_int == 404
        assert resp.headers["OpenStack-API-Version"] == "placement 1.23"
        assert json.loads(resp.body)["errors"][0]["code"] == errors.DEFAULT

    def test_malformed_header_never_reaches_the_app(self) -> None:
        app = microversion.MicroversionMiddleware(_raising(AssertionError("reached")))
        resp = _request(HTTP_OPENSTACK_API_VERSION="placement 1.x").get_response(app)
        assert resp.status_int == 400
        assert "code" not in json.loads(resp.body)["errors"][0]


class TestNoAuth:
    @staticmethod
    def _app(seen: dict[str, Any]) -> noauth.NoAuthMiddleware:
        def inner(environ: dict[str, Any], start_response: Any) -> Any:
            seen.update(environ)
            return _ok(environ, start_response)
        return noauth.NoAuthMiddleware(inner, lambda environ: environ["PATH_INFO"] == "/")

    def test_missing_token_is_401(self) -> None:
        resp = _request(**{VERSION_ENVIRON: (1, 0)}).get_response(self._app({}))
        assert resp.status_int == 401
        assert json.loads(resp.body)["title"] == "Unauthorized"

    def test_public_path_needs_no_token(self) -> None:
        resp = _request("/").get_response(self._app({}))
        assert resp.status_int == 200

    def test_user_and_project_from_token(self) -> None:
        seen: dict[str, Any] = {}
        _request(HTTP_X_AUTH_TOKEN="alice:proj1").get_response(self._app(seen))
        assert seen["HTTP_X_USER_ID"] == "alice"
        assert seen["HTTP_X_PROJECT_ID"] == "proj1"
        assert "admin" not in seen["HTTP_X_ROLES"].split(",")

    def test_project_defaults_to_user(self) -> None:
        seen: dict[str, Any] = {}
        _request(HTTP_X_AUTH_TOKEN="bob").get_response(self._app(seen))
        assert seen["HTTP_X_PROJECT_ID"] == "bob"


class TestRequestLog:
    def test_one_line_per_request(self, caplog: pytest.LogCaptureFixture) -> None:
        app = request_log.RequestLog(_ok)
        req = _request("/resource_providers", QUERY_STRING="name=a",
                       REMOTE_ADDR="10.0.0.9", **{VERSION_ENVIRON: (1, 14)})
        with caplog.at_level(logging.INFO, logger="placement.requestlog"):
            req.get_response(app)
        lines = [r.getMessage() for r in caplog.records
                 if r.name == "placement.requestlog"]
        assert len(lines) == 1
        line = lines[0]
        assert '"GET /resource_providers?name=a"' in line
        assert "status: 200" in line
        assert "microversion: 1.14" in line
        assert "10.0.0.9" in line
        assert "len: " in line

    def test_token_is_never_logged(self, caplog: pytest.LogCaptureFixture) -> None:
        app = request_log.RequestLog(_ok)
        with caplog.at_level(logging.DEBUG):
            _request(HTTP_X_AUTH_TOKEN="s3cr3t-token").get_response(app)
        assert "s3cr3t-token" not in caplog.text
