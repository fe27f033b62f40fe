"""Policy rules for usages: of one provider, and of a project.

``placement:usages`` is checked against the project named in the query
string (``GET /usages?project_id=...``), so that by default a reader of
that project may see its usages and nobody else's.
"""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

PROVIDER_USAGES = "placement:resource_providers:usages"
TOTAL_USAGES = "placement:usages"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        base.documented(PROVIDER_USAGES,
                        "Show how much of each resource class of a resource "
                        "provider is consumed.",
                        ("GET", "/resource_providers/{uuid}/usages")),
        base.documented(TOTAL_USAGES,
                        "Show the resources consumed by a project, or by one "
                        "user of it.  Admins and services may ask about any "
                        "project, readers only about their own.",
                        ("GET", "/usages"),
                        check_str=base.ADMIN_OR_PROJECT_READER_OR_SERVICE_API),
    ]
