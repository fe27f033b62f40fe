"""Released OpenStack Placement, run beside ours to learn what it answers.

Each release is installed from PyPI into a virtualenv of its own under
``.upstream-venvs/`` at the top of the checkout (made once, reused by
later runs; delete the folder to rebuild it), never into the environment
the tests run in.  Older releases need older libraries than today's
resolvers pick, so each carries the pins it runs with.

``serve(release, url, cwd)`` runs that release's ``db sync`` on the
database at ``url`` and serves it with gunicorn (noauth2), as an
operator would, yielding a :class:`servers.Server`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.functional import servers

VENVS = Path(__file__).resolve().parents[2] / ".upstream-venvs"
# What every release needs beside itself: a WSGI server and the drivers.
_SERVING = ("gunicorn", "psycopg2-binary", "pymysql")


@dataclasses.dataclass(frozen=True)
class Release:
    version: str
    # The WSGI callable as gunicorn names it.
    application: str
    # The schema revision its db sync leaves (a fact of that release).
    head: str
    pins: tuple[str, ...] = ()
    # Its newest microversion.
    max_microversion: str = "1.39"


RELEASES = {
    release.version: release for release in (
        Release("16.0.0", "placement.wsgi.api:application", "a082b8bb98d0"),
        # Before consumer types; written for SQLAlchemy 1.x.
        Release("5.0.1", "placement.wsgi:init_application()", "b5c396305c25",
                pins=("sqlalchemy<2", "alembic<1.10", "oslo.db<13",
                      "oslo.policy<3.8"),
                max_microversion="1.36"),
    )
}


def venv(release: Release) -> Path:
    """The virtualenv holding ``release``, made on first use."""
    path = VENVS / release.version
    done = path / ".installed"
    VENVS.mkdir(exist_ok=True)
    with open(VENVS / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time
        if not done.exists():
            _install(release, path)
            done.write_text(release.version)
    return path


def _install(release: Release, path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(path)], check=True)
    pip = [str(path / "bin" / "pip"), "install", "-q", "--disable-pip-version-check"]
    result = subprocess.run(
        pip + ["openstack-placement==%s" % release.version, *_SERVING, *release.pins],
        capture_output=True, text=True)
    if result.returncode != 0:
        message = "cannot install openstack-placement %s: %s" % (
            release.version, result.stderr[-2000:])
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def _env(url: str) -> dict[str, str]:
    env = servers.clean_env(OS_PLACEMENT_DATABASE__CONNECTION=url,
                            OS_API__AUTH_STRATEGY="noauth2")
    # A PYTHONPATH naming our tree (as a run of the suite from a checkout
    # sets it) would make upstream's programs import our ``placement``.
    env.pop("PYTHONPATH", None)
    return env


def db_sync(release: Release, url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """That release's ``placement-manage db sync`` on ``url``."""
    return subprocess.run(
        [str(venv(release) / "bin" / "placement-manage"), "db", "sync"],
        cwd=cwd, env=_env(url), capture_output=True, text=True, timeout=300)


@contextlib.contextmanager
def serve(release: Release, url: str, cwd: Path) -> Iterator[servers.Server]:
    """``db sync`` then gunicorn, both of ``release``, on ``url``."""
    synced = db_sync(release, url, cwd)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    port = servers.free_port()
    command = [str(venv(release) / "bin" / "gunicorn"), "-w", "1",
               "-b", "127.0.0.1:%d" % port, release.application]
    with servers.serve(command, cwd, _env(url), port) as server:
        yield server
