"""The service as operators run it: gunicorn on the WSGI entry point, the
development server on its embedded SQLite database, and a database outage
seen through a real server process."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests import backends
from tests.functional import servers
from tests.functional.tcp_proxy import TcpProxy

ADMIN = {"X-Auth-Token": "admin"}
LATEST = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement latest"}


def _sync(url: str, cwd: Path) -> None:
    import subprocess

    result = subprocess.run(
        [servers.script("placement-manage"), "db", "sync"], cwd=cwd,
        env=servers.clean_env(OS_PLACEMENT_DATABASE__CONNECTION=url),
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr


def _gunicorn(port: int, workers: int = 2) -> list[str]:
    return [sys.executable, "-m", "gunicorn", "-w", str(workers),
            "-b", "127.0.0.1:%d" % port, "placement.wsgi.api:application"]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mysql"])
def test_gunicorn_with_only_two_variables(tmp_path: Path, backend: str) -> None:
    backends.require(backend)
    with backends.fresh_database(backend) as url:
        _sync(url, tmp_path)
        port = servers.free_port()
        # Exactly the two variables the deployment guide names (and PATH).
        env = {"PATH": servers.clean_env()["PATH"],
               "OS_PLACEMENT_DATABASE__CONNECTION": url,
               "OS_API__AUTH_STRATEGY": "noauth2"}
        with servers.serve(_gunicorn(port), tmp_path, env, port) as server:
            for _ in range(4):  # whichever worker answers
                root = server.request("GET", "/")
                assert root.status == 200
                version = root.json["versions"][0]
                assert version["max_version"] == "1.39"
                assert version["min_version"] == "1.0"
                assert root.headers["openstack-api-version"] == "placement 1.0"
            created = server.request("POST", "/resource_providers",
                                     {"name": "gunicorn-rp"}, LATEST)
            assert created.status == 200, created.body
            listed = server.request("GET", "/resource_providers", headers=ADMIN)
            assert listed.status == 200
            assert [rp["name"] for rp in listed.json["resource_providers"]] == [
                "gunicorn-rp"]
            assert server.request("GET", "/resource_providers").status == 401


def test_dev_server_on_embedded_sqlite(tmp_path: Path) -> None:
    port = servers.free_port()
    command = [servers.script("placement-api"), "--port", str(port)]
    env = servers.clean_env(OS_API__AUTH_STRATEGY="noauth2")
    with servers.serve(command, tmp_path, env, port) as server:
        db_file = tmp_path / "placement.sqlite"
        assert db_file.exists()
        printed = server.stdout.read_text()
        assert "sqlite:///%s" % db_file in printed
        assert "http://127.0.0.1:%d/" % port in printed

        root = server.request("GET", "/")
        assert root.json["versions"][0]["max_version"] == "1.39"
        assert server.request("GET", "/resource_providers").status == 401
        traits = server.request("GET", "/traits?name=startswith:HW_CPU_X86_AVX",
                                headers=LATEST)
        assert traits.status == 200
        assert "HW_CPU_X86_AVX2" in traits.json["traits"]
        request_id = traits.headers["x-openstack-request-id"]

    # One log line for that request, with its id, status and microversion.
    log = server.output()
    line = next(line for line in log.splitlines() if request_id in line)
    assert re.search(r'"GET /traits\?name=startswith:HW_CPU_X86_AVX" status: 200 '
                     r"len: \d+ microversion: 1\.39", line), line


def test_dev_server_keeps_its_data_across_restarts(tmp_path: Path) -> None:
    env = servers.clean_env(OS_API__AUTH_STRATEGY="noauth2")
    for attempt in range(2):
        port = servers.free_port()
        command = [servers.script("placement-api"), "--port", str(port)]
        with servers.serve(command, tmp_path, env, port) as server:
            if attempt == 0:
                made = server.request("PUT", "/traits/CUSTOM_KEPT", headers=LATEST)
                assert made.status == 201
            else:
                kept = server.request("GET", "/traits/CUSTOM_KEPT", headers=LATEST)
                assert kept.status == 204


@pytest.mark.parametrize("server_kind", ["gunicorn", "placement-api"])
def test_database_outage_503_then_recovery_without_restart(
        tmp_path: Path, server_kind: str) -> None:
    backends.require("postgresql")
    with backends.fresh_database("postgresql") as url:
        _sync(url, tmp_path)
        direct = sa.engine.make_url(url)
        proxy = TcpProxy(direct.port or 5432)
        try:
            via_proxy = direct.set(port=proxy.port).render_as_string(hide_password=False)
            port = servers.free_port()
            if server_kind == "gunicorn":
                command = _gunicorn(port, workers=1)
            else:
                command = [servers.script("placement-api"), "--port", str(port)]
            env = servers.clean_env(OS_PLACEMENT_DATABASE__CONNECTION=via_proxy,
                                    OS_API__AUTH_STRATEGY="noauth2",
                                    OS_PLACEMENT_DATABASE__MAX_RETRIES="1")
            with servers.serve(command, tmp_path, env, port) as server:
                up = server.request("GET", "/resource_classes", headers=LATEST)
                assert up.status == 200, up.body
                assert "VCPU" in [rc["name"] for rc in up.json["resource_classes"]]

                proxy.cut()
                for _ in range(3):
                    down = server.request("GET", "/resource_classes", headers=LATEST)
                    assert down.status == 503, down.body
                    error = down.json["errors"][0]
                    assert error["status"] == 503
                    assert error["code"] == "placement.undefined_code"
                    assert error["request_id"] == down.headers["x-openstack-request-id"]
                    # Writes fail the same way and write nothing.
                    write = server.request("PUT", "/traits/CUSTOM_DURING_OUTAGE",
                                           headers=LATEST)
                    assert write.status == 503
                # The root document needs no database.
                assert server.request("GET", "/").status == 200

                proxy.restore()
                back = server.request("GET", "/resource_classes", headers=LATEST)
                assert back.status == 200, back.body
                missing = server.request("GET", "/traits/CUSTOM_DURING_OUTAGE",
                                         headers=LATEST)
                assert missing.status == 404
        finally:
            proxy.close()


_PROBE = """
import webob
from placement.wsgi import api
req = webob.Request.blank("/resource_providers")
req.headers["X-Auth-Token"] = "admin"
print(req.get_response(api.application).status)
"""


def _probe_with_file_database(tmp_path: Path, probe: str) -> list[str]:
    """The lines ``probe`` prints in a fresh interpreter whose configuration
    file names a SQLite file and migrates on start."""
    import subprocess

    conf = tmp_path / "placement.conf"
    conf.write_text("[api]\nauth_strategy = noauth2\n"
                    "[placement_database]\nconnection = sqlite:///%s\n"
                    "sync_on_startup = true\n" % (tmp_path / "from-file.sqlite"))
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
        env=servers.clean_env(OS_PLACEMENT_CONFIG_FILES=str(conf)), timeout=120,
        stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()


def test_wsgi_module_reads_the_files_named_in_the_environment(tmp_path: Path) -> None:
    assert _probe_with_file_database(tmp_path, _PROBE)[-1] == "200 OK"
    assert (tmp_path / "from-file.sqlite").exists()


def test_a_worker_migrating_at_start_keeps_no_alembic(tmp_path: Path) -> None:
    # The migration runs in a child process (placement/db/startup.py): the
    # worker serves from the migrated database without alembic loaded.
    probe = _PROBE + "import sys\nprint('alembic' in sys.modules)\n"
    assert _probe_with_file_database(tmp_path, probe)[-2:] == ["200 OK", "False"]


def test_wsgi_module_refuses_an_invalid_configuration(tmp_path: Path) -> None:
    import subprocess

    result = subprocess.run(
        [sys.executable, "-c", "import placement.wsgi.api"], cwd=tmp_path,
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env=servers.clean_env(OS_API__AUTH_STRATEGY="sometimes"))
    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith("placement.conf.InvalidConfig: invalid configuration: "
                                "[api] auth_strategy (from OS_API__AUTH_STRATEGY)")
    assert not list(tmp_path.iterdir())
