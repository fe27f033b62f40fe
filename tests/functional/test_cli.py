"""The console scripts, run as an operator runs them: placement-manage,
placement-status and placement-api's start-up failures."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
import sqlalchemy as sa

import placement
from placement.db import migration
from tests import backends

BIN = Path(sys.executable).parent
PASSWORD = "s3cret-Pa55"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(extra)
    return env


def run(args: list[str], cwd: Path, timeout: float = 120, **env: str
        ) -> subprocess.CompletedProcess[str]:
    script = BIN / args[0]
    assert script.exists(), "%s is not installed next to %s" % (args[0], sys.executable)
    return subprocess.run([str(script)] + args[1:], cwd=cwd, env=_env(**env),
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def db_url(request: pytest.FixtureRequest) -> Iterator[str]:
    backends.require(request.param)
    with backends.fresh_database(request.param) as url:
        yield url


def test_manage_version(tmp_path: Path) -> None:
    result = run(["placement-manage", "--version"], tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == placement.__version__


def test_manage_db_sync_version_and_online_migrations(tmp_path: Path, db_url: str) -> None:
    env = {"OS_PLACEMENT_DATABASE__CONNECTION": db_url}
    head = migration.head_revision()
    assert head

    before = run(["placement-manage", "db", "version"], tmp_path, **env)
    assert before.returncode == 0, before.stderr
    assert before.stdout.strip() == "None"

    for _ in range(2):  # idempotent
        sync = run(["placement-manage", "db", "sync"], tmp_path, **env)
        assert sync.returncode == 0, sync.stderr
        assert "revision %s" % head in sync.stdout

    version = run(["placement-manage", "db", "version"], tmp_path, **env)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == head

    online = run(["placement-manage", "db", "online_data_migrations"], tmp_path, **env)
    assert online.returncode == 0, online.stderr

    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            classes = conn.execute(sa.text("SELECT name FROM resource_classes")).scalars()
            assert "VCPU" in set(classes)
    finally:
        engine.dispose()


def test_manage_reads_config_file(tmp_path: Path) -> None:
    db_file = tmp_path / "from-file.sqlite"
    conf = tmp_path / "placement.conf"
    conf.write_text("[placement_database]\nconnection = sqlite:///%s\n" % db_file)
    result = run(["placement-manage", "--config-file", str(conf), "db", "sync"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert db_file.exists()
    assert not (tmp_path / "placement.sqlite").exists()


def test_status_upgrade_check(tmp_path: Path, db_url: str) -> None:
    env = {"OS_PLACEMENT_DATABASE__CONNECTION": db_url}
    before = run(["placement-status", "upgrade", "check"], tmp_path, **env)
    assert before.returncode == 2, before.stdout  # failure: not migrated
    assert "placement-manage db sync" in before.stdout

    assert run(["placement-manage", "db", "sync"], tmp_path, **env).returncode == 0
    after = run(["placement-status", "upgrade", "check"], tmp_path, **env)
    assert after.returncode == 0, after.stdout
    assert "Database schema" in after.stdout
    assert "Failure" not in after.stdout


UNREACHABLE = {
    "postgresql": "postgresql+psycopg2://placement:%s@127.0.0.1:{port}/placement",
    "mysql": "mysql+pymysql://placement:%s@127.0.0.1:{port}/placement",
}

COMMANDS = [
    ["placement-manage", "db", "sync"],
    ["placement-manage", "db", "version"],
    ["placement-api", "--port", "0"],
]


@pytest.mark.parametrize("backend", sorted(UNREACHABLE))
@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c[:3]) for c in COMMANDS])
def test_unreachable_database_is_a_clear_error(
        tmp_path: Path, backend: str, command: list[str]) -> None:
    port = _closed_port()
    url = (UNREACHABLE[backend] % PASSWORD).format(port=port)
    result = run(command, tmp_path,
                 OS_PLACEMENT_DATABASE__CONNECTION=url,
                 OS_PLACEMENT_DATABASE__SYNC_ON_STARTUP="true",
                 OS_PLACEMENT_DATABASE__MAX_RETRIES="1",
                 OS_API__AUTH_STRATEGY="noauth2")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert PASSWORD not in output
    assert "Traceback" not in output
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith(command[0] + ": cannot connect to database ")
    assert "placement:***@127.0.0.1:%d/placement" % port in message
    assert not list(tmp_path.iterdir()), "nothing may be written"


def test_status_with_unreachable_database(tmp_path: Path) -> None:
    url = (UNREACHABLE["postgresql"] % PASSWORD).format(port=_closed_port())
    result = run(["placement-status", "upgrade", "check"], tmp_path,
                 OS_PLACEMENT_DATABASE__CONNECTION=url)
    assert result.returncode == 2
    assert "cannot connect to database" in result.stdout
    assert PASSWORD not in result.stdout + result.stderr


def test_wrong_password_is_a_clear_error(tmp_path: Path) -> None:
    backends.require("mysql")
    server = sa.engine.make_url(backends.server_url("mysql"))
    url = server.set(username="no_such_user", password=PASSWORD,
                     database="placement").render_as_string(hide_password=False)
    result = run(["placement-manage", "db", "sync"], tmp_path,
                 OS_PLACEMENT_DATABASE__CONNECTION=url)
    assert result.returncode == 1
    assert "cannot connect to database" in result.stderr
    assert "no_such_user:***@" in result.stderr
    assert PASSWORD not in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", [
    ["placement-manage", "db", "sync"],
    ["placement-api", "--port", "0"],
])
def test_invalid_config_value_is_a_clear_error(tmp_path: Path, command: list[str]) -> None:
    result = run(command, tmp_path, OS_API__AUTH_STRATEGY="sometimes",
                 OS_PLACEMENT__MAX_ALLOCATION_CANDIDATES="lots")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    message = result.stderr.strip()
    assert message.startswith(command[0] + ": invalid configuration: ")
    assert "[api] auth_strategy (from OS_API__AUTH_STRATEGY)" in message
    assert "sometimes" in message
    assert "[placement] max_allocation_candidates" in message
    assert not list(tmp_path.iterdir()), "nothing may be written"


def test_status_reports_invalid_config(tmp_path: Path) -> None:
    result = run(["placement-status", "upgrade", "check"], tmp_path,
                 OS_PLACEMENT_DATABASE__CONNECTION="sqlite:///%s" % (tmp_path / "x.sqlite"),
                 OS_API__AUTH_STRATEGY="sometimes")
    assert result.returncode == 2
    assert "Configuration" in result.stdout
    assert "sometimes" in result.stdout


def test_api_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = run(["placement-api", "--port", str(port)], tmp_path,
                     OS_API__AUTH_STRATEGY="noauth2")
    assert result.returncode == 1
    assert "cannot listen on 127.0.0.1:%d" % port in result.stderr
    assert "Traceback" not in result.stderr


def test_api_serves_the_baremetal_api_too(tmp_path: Path) -> None:
    from tests.functional.live_server import free_port

    port, baremetal_port = free_port(), free_port()
    process = subprocess.Popen(
        [str(BIN / "placement-api"), "--port", str(port),
         "--baremetal-port", str(baremetal_port)],
        cwd=tmp_path, env=_env(OS_API__AUTH_STRATEGY="noauth2"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        answers = {}
        deadline = time.monotonic() + 60
        while len(answers) < 2 and time.monotonic() < deadline:
            for name, number in (("placement", port), ("baremetal", baremetal_port)):
                try:
                    with urllib.request.urlopen(
                            "http://127.0.0.1:%d/" % number, timeout=5) as resp:
                        answers[name] = json.loads(resp.read())
                except OSError:
                    time.sleep(0.2)
        assert answers["placement"]["versions"][0]["id"] == "v1.0"
        assert answers["baremetal"]["name"] == "OpenStack Ironic API"
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_api_migrates_once_at_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    from placement.cmd import api

    upgrades = []
    upgrade = migration.upgrade

    def counted(db: object) -> None:
        upgrades.append(db)
        upgrade(db)

    monkeypatch.setattr(migration, "upgrade", counted)
    # A second migration would run in this process (the engine has
    # started), where the calls are counted.
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("OS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("OS_PLACEMENT_DATABASE__SYNC_ON_STARTUP", "True")
    monkeypatch.setenv("OS_API__AUTH_STRATEGY", "noauth2")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        # The placement application is built, then the port refused.
        assert api.main(["--port", str(busy.getsockname()[1])]) == 1
    assert len(upgrades) == 1
    assert "cannot listen" in capsys.readouterr().err
