"""Entry points for oslo-config-generator (namespace ``placement.conf``)."""

from __future__ import annotations

from oslo_config import cfg

from placement.conf import api, database, metrics, paths, placement, policy


def list_opts() -> list[tuple[str | None, list[cfg.Opt]]]:
    opts: list[tuple[str | None, list[cfg.Opt]]] = [
        (None, paths.OPTS),
        (api.GROUP.name, api.OPTS),
        (database.GROUP.name, database.OPTS),
        (placement.GROUP.name, placement.OPTS),
        (metrics.GROUP.name, metrics.OPTS),
    ]
    # oslo.policy releases that dropped enforce_scope do not list it, but
    # placement still honours it, so the sample documents it here.
    opts += policy.list_opts()
    return opts


def set_defaults(conf: cfg.ConfigOpts | None = None) -> None:
    """Defaults of other libraries' options as placement wants them."""
    from oslo_middleware import cors, sizelimit

    from placement.conf import MAX_REQUEST_BODY_SIZE, cors_defaults

    cors.set_defaults(**cors_defaults())
    cfg.set_defaults(sizelimit.OPTS, max_request_body_size=MAX_REQUEST_BODY_SIZE)
