"""The policy rule of the operator's views: ``GET /metrics`` and ``GET
/capacity`` (served only with ``[metrics] enabled``).

Not a rule of OpenStack Placement, which has neither URL.  Admin only by
default: the figures describe the whole cloud.  An operator who lets
Prometheus scrape without a token sets the rule to ``"@"`` (anyone);
the two URLs then skip authentication altogether (see
``placement.routes.Router.is_public``).
"""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

VIEW = "placement:metrics"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        base.documented(VIEW,
                        "Read the service's metrics (Prometheus text format) "
                        "and the cloud's capacity (JSON or the capacity "
                        "page).  Set to \"@\" to let scrapers in without a "
                        "token.",
                        ("GET", "/metrics"), ("GET", "/capacity"),
                        check_str=base.ADMIN_API),
    ]
