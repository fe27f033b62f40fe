"""``[DEFAULT]`` options about where things live."""

from oslo_config import cfg

OPTS = [
    cfg.StrOpt(
        "state_path",
        default="$pybasedir",
        help="Top-level directory for keeping state.",
    ),
    cfg.StrOpt(
        "pybasedir",
        default="",
        sample_default="<Path>",
        help="Directory where the placement python module is installed.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(OPTS)
