"""The ``[metrics]`` group: ``GET /metrics`` and ``GET /capacity``.

Both are off by default: with ``enabled = False`` neither URL exists
(404, as for any unknown URL) and no request is measured.
"""

from oslo_config import cfg

GROUP = cfg.OptGroup("metrics", title="Metrics and capacity options")

OPTS: list[cfg.Opt] = [
    cfg.BoolOpt(
        "enabled",
        default=False,
        help="Serve GET /metrics (Prometheus text format) and GET /capacity "
        "(JSON, or an HTML page for browsers), both guarded by the "
        "placement:metrics policy rule, and measure every request.  When "
        "False neither URL exists.  Several gunicorn or uwsgi workers sum "
        "their figures only when PROMETHEUS_MULTIPROC_DIR names an empty "
        "directory shared by them (see README, 'Metrics').",
    ),
    cfg.MultiStrOpt(
        "capacity_requests",
        default=[],
        help="Flavors whose 'how many more fit' is exported (gauge "
        "placement_capacity_fits, per aggregate) and shown on the capacity "
        "page, one per line, as '<name>:<query>' where the query takes the "
        "resources, required and member_of parameters of GET "
        "/allocation_candidates, e.g. "
        "'small:resources=VCPU:1,MEMORY_MB:2048' or "
        "'gpu:resources=VCPU:8,VGPU:1&required=CUSTOM_A100'.  Repeat the "
        "option for each flavor.",
    ),
    cfg.IntOpt(
        "capacity_interval",
        default=15,
        min=0,
        help="Seconds for which a worker answers scrapes and capacity "
        "questions with the capacity figures it last computed: at most one "
        "computation per interval.  Set it to the Prometheus scrape "
        "interval (or below); 0 computes them for every request.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    # A fresh group object per configuration (see conf/placement.py).
    conf.register_group(cfg.OptGroup(GROUP.name, title=GROUP.title, help=GROUP.help))
    conf.register_opts(OPTS, group=GROUP.name)
