"""The virtualenvs under test: this repository ("ours") and upstream.

Each side is a virtualenv holding ``bin/gunicorn`` and a ``placement``
package exposing ``placement.wsgi.api:application``.  Ours defaults to
``benchmarks/.venv-ours``, created on first use with the repository
installed in editable mode (so it always runs the checked-out code).
Upstream is only created when asked, with the pinned release from PyPI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Callable, Optional

from benchmarks import sharedbench

OURS_DEFAULT = os.path.join(sharedbench.REPO_ROOT, "benchmarks", ".venv-ours")
UPSTREAM_DEFAULT = os.path.join(sharedbench.REPO_ROOT, "benchmarks",
                                ".venv-upstream")
UPSTREAM_VERSION = "16.0.0"
# What upstream's server needs beside the package itself (its requirements
# name neither a WSGI server nor database drivers).
UPSTREAM_EXTRAS = ("gunicorn", "psycopg2-binary", "pymysql")

Log = Callable[[str], None]


def _python(venv: str) -> str:
    return os.path.join(venv, "bin", "python")


# Probes run from "/" so that a checkout in the current directory does not
# shadow the venv's own placement package.

def is_usable(venv: str) -> bool:
    """True when ``venv`` can serve ``placement.wsgi.api`` with gunicorn."""
    if not os.access(os.path.join(venv, "bin", "gunicorn"), os.X_OK):
        return False
    probe = subprocess.run(
        [_python(venv), "-c", "import placement.wsgi"],
        capture_output=True, text=True, cwd="/")
    return probe.returncode == 0


def placement_location(venv: str) -> Optional[str]:
    """Where the venv's ``placement`` package is imported from."""
    probe = subprocess.run(
        [_python(venv), "-c",
         "import os, placement; print(os.path.dirname(placement.__file__))"],
        capture_output=True, text=True, cwd="/")
    return probe.stdout.strip() or None


def _create(venv: str, packages: list[str], log: Log,
            python: str = sys.executable) -> None:
    log("creating virtualenv %s and installing %s" % (venv, " ".join(packages)))
    subprocess.run([python, "-m", "venv", venv], check=True)
    subprocess.run([_python(venv), "-m", "pip", "install", "-q", "--upgrade",
                    "pip"], check=False)
    subprocess.run([_python(venv), "-m", "pip", "install", "-q"] + packages,
                   check=True)


def ensure_ours(venv: Optional[str], log: Log) -> str:
    """The venv running this repository, created when it does not exist."""
    venv = os.path.abspath(venv or OURS_DEFAULT)
    if not is_usable(venv):
        if os.path.exists(venv) and os.listdir(venv):
            if not os.path.exists(os.path.join(venv, "pyvenv.cfg")):
                raise SystemExit("%s exists but is not a virtualenv" % venv)
        _create(venv, ["-e", sharedbench.REPO_ROOT], log)
    return venv


def ensure_upstream(venv: Optional[str], install: bool, version: str,
                    log: Log) -> Optional[str]:
    """The upstream venv, installed when ``install`` is set and it is missing.

    Returns None when no upstream venv is wanted.
    """
    if not venv and not install:
        return None
    venv = os.path.abspath(venv or UPSTREAM_DEFAULT)
    if is_usable(venv):
        return venv
    if not install:
        raise SystemExit("%s has no usable upstream placement and gunicorn; "
                         "add --install-upstream to create it" % venv)
    _create(venv, ["openstack-placement==%s" % version] + list(UPSTREAM_EXTRAS),
            log)
    return venv


def gunicorn_version(venv: str) -> Optional[str]:
    """The gunicorn release a side serves with.  It matters to the figures:
    since 26.0 a sync worker, after each response, waits for the client to
    close its end of the connection, so a busy client holds workers up."""
    probe = subprocess.run(
        [os.path.join(venv, "bin", "python"), "-c",
         "import importlib.metadata as m; print(m.version('gunicorn'))"],
        capture_output=True, text=True)
    return probe.stdout.strip() or None if probe.returncode == 0 else None


def source_revision(package_dir: Optional[str]) -> Optional[str]:
    """``git describe --always --dirty`` of the checkout a package comes
    from, or None when it is not in a git work tree (e.g. from PyPI)."""
    if not package_dir:
        return None
    probe = subprocess.run(
        ["git", "-C", os.path.dirname(package_dir), "describe", "--always",
         "--dirty"], capture_output=True, text=True)
    return probe.stdout.strip() or None if probe.returncode == 0 else None
