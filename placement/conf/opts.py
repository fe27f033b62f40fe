"""Entry points for oslo-config-generator (namespace ``placement.conf``)."""

from __future__ import annotations

from oslo_config import cfg

from placement.conf import api, database, paths, placement


def list_opts() -> list[tuple[str | None, list[cfg.Opt]]]:
    return [
        (None, paths.OPTS),
        (api.GROUP.name, api.OPTS),
        (database.GROUP.name, database.OPTS),
        (placement.GROUP.name, placement.OPTS),
    ]


def set_defaults(conf: cfg.ConfigOpts | None = None) -> None:
    """Defaults of other libraries' options as placement wants them."""
    from oslo_middleware import cors

    from placement.conf import cors_defaults

    cors.set_defaults(**cors_defaults())
