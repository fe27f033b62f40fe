"""The ``[api]`` group: how requests are authenticated."""

from oslo_config import cfg

GROUP = cfg.OptGroup("api", title="API options")

OPTS: list[cfg.Opt] = [
    cfg.StrOpt(
        "auth_strategy",
        default="keystone",
        choices=[
            ("keystone", "Validate tokens with keystonemiddleware."),
            (
                "noauth2",
                "Trust X-Auth-Token as '<user>[:<project>]'; for tests and "
                "development only.",
            ),
        ],
        help="How incoming requests are authenticated.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    # A fresh group object per configuration: oslo.config keeps overrides
    # in the group it is given, so a shared module-level group would carry
    # one configuration's overrides into the next.
    conf.register_group(cfg.OptGroup(GROUP.name, title=GROUP.title, help=GROUP.help))
    conf.register_opts(OPTS, group=GROUP.name)
