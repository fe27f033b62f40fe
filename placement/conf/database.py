"""The ``[placement_database]`` group: the shared database.

Besides our own ``connection`` and ``sync_on_startup``, the group carries
oslo.db's engine options (pool sizes, recycle time, retries) under the same
names upstream uses.
"""

from oslo_config import cfg
from oslo_db import options as oslo_db_options

GROUP = cfg.OptGroup(
    "placement_database",
    title="Placement database options",
    help="The database every placement API worker shares.",
)

_SKIP = {"connection", "slave_connection", "db_inc_retry_interval",
         "db_max_retry_interval", "db_max_retries", "db_retry_interval",
         "use_db_reconnect", "backend", "sqlite_synchronous",
         "asyncio_connection", "asyncio_slave_connection",
         "synchronous_reader"}

OPTS = [
    cfg.StrOpt(
        "connection",
        secret=True,
        help="SQLAlchemy URL of the placement database. When unset, the "
        "development server uses a SQLite file in the working directory.",
    ),
    cfg.BoolOpt(
        "sync_on_startup",
        default=False,
        help="Create or upgrade the database schema when the API starts.",
    ),
    cfg.BoolOpt(
        "prepared_statements",
        default=True,
        help="PostgreSQL: run the statements a worker repeats as server-side "
        "prepared statements, parsed and planned once per connection "
        "(on generic plans) instead of at every execution. Set to false when "
        "placement reaches PostgreSQL through a pooler that shares server "
        "sessions between clients (pgbouncer in transaction or statement "
        "mode): a prepared statement lives in one server session. Other "
        "databases ignore it.",
    ),
    cfg.BoolOpt(
        "sqlite_synchronous",
        default=True,
        help="If False, SQLite does not wait for data to reach the disk.",
    ),
] + [
    opt for opt in oslo_db_options.database_opts if opt.dest not in _SKIP
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    # A fresh group object per configuration: oslo.config keeps overrides
    # in the group it is given, so a shared module-level group would carry
    # one configuration's overrides into the next.
    conf.register_group(cfg.OptGroup(GROUP.name, title=GROUP.title, help=GROUP.help))
    conf.register_opts(OPTS, group=GROUP.name)
