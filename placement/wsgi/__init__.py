"""WSGI entry points for application servers."""

from __future__ import annotations

import os

from oslo_config import cfg

from placement import conf as placement_conf


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
