"""A fake keystone for tests: a tiny identity service on 127.0.0.1.

It answers what keystonemiddleware's auth_token asks of keystone: version
discovery, the service user's password login (``POST /v3/auth/tokens``,
which must carry ``SERVICE_PASSWORD``) and user token validation (``GET
/v3/auth/tokens`` with the service token), and records every request it
received so tests can look at them.
"""

from __future__ import annotations

import datetime
import http.server
import json
import os
import threading
import uuid
from typing import Any

from placement import conf as placement_conf

SERVICE_PASSWORD = "s3rvice-pa55word"
SERVICE_TOKEN = "service-token-" + uuid.uuid4().hex
ADMIN_TOKEN = "admin-token-" + uuid.uuid4().hex
MEMBER_TOKEN = "member-token-" + uuid.uuid4().hex
READER_TOKEN = "reader-token-" + uuid.uuid4().hex
SYSTEM_ADMIN_TOKEN = "system-token-" + uuid.uuid4().hex
PROJECT = uuid.uuid4().hex
OTHER_PROJECT = uuid.uuid4().hex


class FakeKeystone:
    """Token bodies by token id, and the requests the server received."""

    def __init__(self) -> None:
        self.tokens: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), self._handler())
        self.url = "http://127.0.0.1:%d/identity" % self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)

    def token(self, roles: list[str], project_id: str | None = None,
              system: bool = False, user_id: str | None = None
              ) -> dict[str, Any]:
        """A v3 token body (Identity API v3, ``GET /v3/auth/tokens``)."""
        now = datetime.datetime.now(datetime.timezone.utc)
        token: dict[str, Any] = {
            "methods": ["password"],
            "issued_at": now.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
            "expires_at": (now + datetime.timedelta(hours=1)).strftime(
                "%Y-%m-%dT%H:%M:%S.000000Z"),
            "audit_ids": [uuid.uuid4().hex[:22]],
            "user": {"id": user_id or uuid.uuid4().hex, "name": "someone",
                     "domain": {"id": "default", "name": "Default"}},
            "roles": [{"id": uuid.uuid4().hex, "name": role} for role in roles],
            "catalog": [{
                "type": "identity", "name": "keystone", "id": uuid.uuid4().hex,
                "endpoints": [
                    {"id": uuid.uuid4().hex, "interface": interface,
                     "region": "RegionOne", "region_id": "RegionOne",
                     "url": self.url}
                    for interface in ("public", "internal", "admin")],
            }],
        }
        if system:
            token["system"] = {"all": True}
        else:
            token["project"] = {"id": project_id or PROJECT, "name": "project",
                                "domain": {"id": "default", "name": "Default"}}
        return {"token": token}

    def version(self) -> dict[str, Any]:
        """The v3 entry of a version discovery document."""
        return {"id": "v3.14", "status": "stable",
                "updated": "2020-04-07T00:00:00Z",
                "links": [{"rel": "self", "href": self.url + "/v3/"}],
                "media-types": [{
                    "base": "application/json",
                    "type": "application/vnd.openstack.identity-v3+json"}]}

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        keystone = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: Any,
                       headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _record(self, body: bytes = b"") -> None:
                keystone.requests.append(
                    (self.command, self.path, dict(self.headers), body))

            def do_GET(self) -> None:
                self._record()
                path = self.path.rstrip("/")
                if path == "/identity":
                    self._reply(300, {"versions": {
                        "values": [keystone.version()]}})
                elif path == "/identity/v3":
                    self._reply(200, {"version": keystone.version()})
                elif path == "/identity/v3/auth/tokens":
                    if self.headers.get("X-Auth-Token") != SERVICE_TOKEN:
                        self._reply(401, {"error": {"code": 401}})
                        return
                    subject = self.headers.get("X-Subject-Token", "")
                    if subject in keystone.tokens:
                        self._reply(200, keystone.tokens[subject],
                                    {"X-Subject-Token": subject})
                    else:
                        self._reply(404, {"error": {"code": 404}})
                else:
                    self._reply(404, {"error": {"code": 404}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                self._record(body)
                if self.path.rstrip("/") != "/identity/v3/auth/tokens":
                    self._reply(404, {"error": {"code": 404}})
                    return
                password = json.loads(body)["auth"]["identity"]["password"]
                if password["user"]["password"] != SERVICE_PASSWORD:
                    self._reply(401, {"error": {"code": 401}})
                    return
                self._reply(201, keystone.token(["service"]),
                            {"X-Subject-Token": SERVICE_TOKEN})

        return Handler

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()



def placement_conf_for(workdir: str, url: str, keystone_url: str,
                       **authtoken: Any) -> Any:
    """A configuration read from a placement.conf using keystone at
    ``keystone_url``, as an operator writes it."""
    options = {
        "www_authenticate_uri": keystone_url,
        "auth_type": "password",
        "auth_url": keystone_url,
        "username": "placement",
        "password": SERVICE_PASSWORD,
        "project_name": "service",
        "user_domain_name": "Default",
        "project_domain_name": "Default",
        "http_request_max_retries": 0,
    }
    options.update(authtoken)
    path = os.path.join(workdir, "placement-%s.conf" % uuid.uuid4().hex)
    with open(path, "w") as handle:
        handle.write("[api]\nauth_strategy = keystone\n"
                     "[placement_database]\nconnection = %s\n"
                     "[keystone_authtoken]\n" % url)
        for name, value in options.items():
            handle.write("%s = %s\n" % (name, value))
    conf = placement_conf.load(default_config_files=[path])
    # placement.conf registers module-level OptGroup objects, whose option
    # tables oslo.config shares between ConfigOpts objects (it copies a
    # group shallowly), so another test's set_override() of these options
    # would win over this file.  Drop any such leftover.
    conf.clear_override("auth_strategy", group="api")
    conf.clear_override("connection", group="placement_database")
    return conf
