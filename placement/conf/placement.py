"""The ``[placement]`` group: behaviour of allocation candidates and claims."""

from oslo_config import cfg

GROUP = cfg.OptGroup("placement", title="Placement service options")

_NIL_UUID = "00000000-0000-0000-0000-000000000000"

OPTS: list[cfg.Opt] = [
    cfg.BoolOpt(
        "randomize_allocation_candidates",
        default=False,
        help="Shuffle allocation candidates before applying the limit, so "
        "that schedulers racing on the same request spread their claims. "
        "When False the order is deterministic.",
    ),
    cfg.StrOpt(
        "incomplete_consumer_project_id",
        default=_NIL_UUID,
        help="Project recorded for consumers whose allocations were written "
        "before microversion 1.8 required a project.",
    ),
    cfg.StrOpt(
        "incomplete_consumer_user_id",
        default=_NIL_UUID,
        help="User recorded for consumers whose allocations were written "
        "before microversion 1.8 required a user.",
    ),
    cfg.IntOpt(
        "allocation_conflict_retry_count",
        default=10,
        min=0,
        help="How many times a write that lost a race with another writer "
        "(deadlock or serialization failure) is retried before answering "
        "409 placement.concurrent_update.",
    ),
    cfg.IntOpt(
        "max_allocation_candidates",
        default=-1,
        help="Upper bound on the allocation candidates one request returns "
        "when it gives no smaller limit; -1 means no bound.",
    ),
    cfg.StrOpt(
        "allocation_candidates_generation_strategy",
        default="depth-first",
        choices=[
            ("depth-first", "Fill the result from the first root providers "
             "before moving on to others."),
            ("breadth-first", "Take candidates from every root provider in "
             "turn, so a capped result spans as many roots as possible."),
        ],
        help="Order in which candidates are produced when "
        "max_allocation_candidates bounds the result.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    # A fresh group object per configuration: oslo.config keeps overrides
    # in the group it is given, so a shared module-level group would carry
    # one configuration's overrides into the next.
    conf.register_group(cfg.OptGroup(GROUP.name, title=GROUP.title, help=GROUP.help))
    conf.register_opts(OPTS, group=GROUP.name)
