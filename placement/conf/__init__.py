"""Configuration: option definitions, one module per group, and loading.

Option and group names are the operator-facing contract shared with
OpenStack Placement, so existing ``placement.conf`` files keep working.
Every option can also be set as ``OS_<GROUP>__<OPTION>`` in the environment
(oslo.config's environment source).
"""

from __future__ import annotations

import os

from oslo_config import cfg
from oslo_log import log as logging

from placement.conf import api, database, placement, paths

DEFAULT_CONFIG_FILES = ["/etc/placement/placement.conf"]


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register every option the service reads on ``conf``."""
    api.register_opts(conf)
    database.register_opts(conf)
    placement.register_opts(conf)
    paths.register_opts(conf)
    logging.register_options(conf)
    from placement import policy

    policy.register_opts(conf)
    from keystonemiddleware import auth_token

    for group, opts in auth_token.list_opts():
        conf.register_opts(opts, group=group)
    from oslo_middleware import cors

    cors.set_defaults(**cors_defaults())


def cors_defaults() -> dict[str, list[str]]:
    """Headers CORS must allow and expose so browsers can speak microversions."""
    return {
        "allow_headers": [
            "X-Auth-Token",
            "X-Openstack-Request-Id",
            "OpenStack-API-Version",
            "Content-Type",
        ],
        "expose_headers": [
            "X-Openstack-Request-Id",
            "OpenStack-API-Version",
            "Vary",
            "Last-Modified",
        ],
        "allow_methods": ["GET", "PUT", "POST", "DELETE", "PATCH"],
    }


def load(
    args: list[str] | None = None,
    default_config_files: list[str] | None = None,
    prog: str = "placement",
) -> cfg.ConfigOpts:
    """A fresh, fully registered and parsed configuration.

    Config files default to ``/etc/placement/placement.conf`` when it exists;
    ``--config-file`` on the command line replaces it.
    """
    conf = cfg.ConfigOpts()
    register_opts(conf)
    if default_config_files is None:
        default_config_files = [
            path for path in DEFAULT_CONFIG_FILES if os.path.exists(path)
        ]
    conf(
        args if args is not None else [],
        project="placement",
        prog=prog,
        default_config_files=default_config_files,
    )
    return conf
