"""WSGI entry points for application servers."""

from __future__ import annotations

import os
from typing import Any, Callable

import sqlalchemy as sa
from oslo_config import cfg

from placement import conf as placement_conf
from placement.db import startup
from placement.db.api import Database


def load_conf() -> cfg.ConfigOpts:
    """The configuration of a WSGI worker, with logging set up:
    ``/etc/placement/placement.conf`` or the files named in
    ``OS_PLACEMENT_CONFIG_FILES`` (comma separated), and ``OS_<GROUP>__<OPTION>``
    environment variables."""
    files = os.environ.get("OS_PLACEMENT_CONFIG_FILES")
    conf = placement_conf.load(
        default_config_files=files.split(",") if files else None)
    placement_conf.setup_logging(conf)
    return conf


def application(build_app: Callable[[cfg.ConfigOpts, Database], Any],
                warm: Callable[[sa.engine.Connection], None] | None = None) -> Any:
    """A worker's application: ``build_app`` on the worker's configuration
    and database, which it starts connecting to at once, so that its first
    request finds a connection ready (:func:`startup.connect_in_background`,
    which runs ``warm`` on it)."""
    conf = load_conf()
    db = Database(conf)
    built = build_app(conf, db)
    startup.connect_in_background(db, warm)
    return built
