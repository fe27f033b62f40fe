"""Base rules the resource rules are built from."""

from __future__ import annotations

from oslo_policy import policy

ADMIN_API = "rule:admin_api"
SERVICE_API = "rule:service_api"
ADMIN_OR_SERVICE_API = "rule:admin_or_service_api"


def rules() -> list[policy.RuleDefault]:
    return [
        policy.RuleDefault(
            "admin_api", "role:admin",
            description="Default rule for most placement APIs."),
        policy.RuleDefault(
            "service_api", "role:service",
            description="Default rule for service-to-service APIs."),
        policy.RuleDefault(
            "admin_or_service_api", "role:admin or role:service",
            description="Default rule for APIs that admins and services use."),
    ]
