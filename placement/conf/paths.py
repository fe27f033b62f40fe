"""``[DEFAULT]`` options: where things live, and start-up logging."""

from oslo_config import cfg

OPTS: list[cfg.Opt] = [
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
    cfg.StrOpt(
        "tempdir",
        help="Directory for temporary files; the system default when unset.",
    ),
    cfg.BoolOpt(
        "log_options",
        default=True,
        help="Log the value of every registered option, at DEBUG level, "
        "when the service starts.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(OPTS)
