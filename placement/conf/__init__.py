"""Configuration: option definitions, one module per group, and loading.

Option and group names are the operator-facing contract shared with
OpenStack Placement, so existing ``placement.conf`` files keep working.
Every option can also be set as ``OS_<GROUP>__<OPTION>`` in the environment
(oslo.config's environment source).
"""

from __future__ import annotations

import logging as std_logging
import os
import re
import tempfile

from oslo_config import cfg
from oslo_log import log as logging

from placement.conf import api, database, metrics, paths, placement, policy

DEFAULT_CONFIG_FILES = ["/etc/placement/placement.conf"]

# Our default for [oslo_middleware] max_request_body_size, instead of
# oslo.middleware's 112 KiB: OpenStack Placement sets no limit, and nova's
# reshape of a host with a few hundred instances, or a bulk POST
# /allocations, is larger than that.  16 MiB holds tens of thousands of
# consumers' allocations and still refuses absurd bodies.
MAX_REQUEST_BODY_SIZE = 16 * 1024 * 1024


class InvalidConfig(ValueError):
    """Options whose values their types refuse; the message lists them all."""


# oslo.config reports a bad value as "Value for option X from <location
# repr> is not valid: <why>"; we keep <why> and say where the value came
# from in plain words.
_BAD_VALUE = re.compile(
    r"Value for option \S+ from LocationInfo\(.*?detail='(?P<where>[^']*)'\)"
    r" is not valid: (?P<why>.*)", re.DOTALL)


def env_var(group: str | None, name: str) -> str:
    """The environment variable that sets an option: ``OS_<GROUP>__<OPTION>``."""
    return "OS_%s__%s" % ((group or "DEFAULT").upper(), name.upper())


def _describe(group: str | None, name: str, exc: Exception) -> str:
    option = "[%s] %s" % (group or "DEFAULT", name)
    match = _BAD_VALUE.match(str(exc))
    if not match:
        return "%s: %s" % (option, exc)
    # The environment wins over config files, and oslo.config names the
    # file even when the bad value came from the environment.
    variable = env_var(group, name)
    where = variable if variable in os.environ else match["where"]
    return "%s (from %s): %s" % (option, where, match["why"])


def check(conf: cfg.ConfigOpts) -> None:
    """Read every registered option once; raise :class:`InvalidConfig` if any
    value cannot be used.

    oslo.config only converts a value when it is first read, so without this
    a typo in a config file or environment variable would surface as a
    traceback in the middle of serving, or not until the option is needed.
    """
    problems = []
    for name in conf:
        try:
            value = conf[name]
        except (ValueError, cfg.Error) as exc:
            problems.append(_describe(None, name, exc))
            continue
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            for opt in value:
                try:
                    value[opt]
                except (ValueError, cfg.Error) as exc:
                    problems.append(_describe(name, opt, exc))
    if problems:
        raise InvalidConfig("invalid configuration: " + "; ".join(problems))


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register every option the service reads on ``conf``."""
    api.register_opts(conf)
    database.register_opts(conf)
    metrics.register_opts(conf)
    placement.register_opts(conf)
    paths.register_opts(conf)
    logging.register_options(conf)
    policy.register_opts(conf)
    from oslo_middleware import cors, sizelimit

    cors.set_defaults(**cors_defaults())
    cfg.set_defaults(sizelimit.OPTS, max_request_body_size=MAX_REQUEST_BODY_SIZE)


def _register_keystone_opts(conf: cfg.ConfigOpts) -> None:
    """``[keystone_authtoken]``, registered only when tokens are checked:
    importing keystonemiddleware costs every worker tens of megabytes, which
    a service run with ``noauth2`` does not need to pay."""
    try:
        strategy = conf.api.auth_strategy
    except (ValueError, cfg.Error):
        return  # check() reports the bad value
    if strategy != "keystone":
        return
    from keystonemiddleware import auth_token

    for group, opts in auth_token.list_opts():
        conf.register_opts(opts, group=group)


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


def setup_logging(conf: cfg.ConfigOpts) -> None:
    """Start oslo.log for a service and apply the ``[DEFAULT]`` start-up options."""
    logging.setup(conf, "placement")
    if conf.tempdir:
        tempfile.tempdir = conf.tempdir
    if conf.log_options:
        conf.log_opt_values(logging.getLogger(__name__), std_logging.DEBUG)


def load(
    args: list[str] | None = None,
    default_config_files: list[str] | None = None,
    prog: str = "placement",
) -> cfg.ConfigOpts:
    """A fresh, fully registered and parsed configuration.

    Config files default to ``/etc/placement/placement.conf`` when it exists;
    ``--config-file`` on the command line replaces it.  Raises
    :class:`InvalidConfig` when an option has a value its type refuses.
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
    _register_keystone_opts(conf)
    check(conf)
    return conf
