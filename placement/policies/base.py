"""The base rules that every resource rule is written in terms of.

Resource rules never name roles themselves; they refer to one of these base
rules (``rule:admin_or_service_api`` and so on), so that an operator can
change who counts as an administrator, a service or a project reader in one
line of a policy file.

The defaults are OpenStack's secure RBAC ones: placement is an
administrator's and a service's API, scoped to projects, and a reader of a
project may only look at that project's total usages.  Before secure RBAC
every rule was simply ``role:admin``; that legacy check string is kept as
the deprecated rule of the base rules, so with ``[oslo_policy]
enforce_new_defaults = False`` an admin is still allowed whatever the new
default says.
"""

from __future__ import annotations

from oslo_log import versionutils
from oslo_policy import policy

ADMIN_API = "rule:admin_api"
SERVICE_API = "rule:service_api"
ADMIN_OR_SERVICE_API = "rule:admin_or_service_api"
PROJECT_READER_API = "rule:project_reader_api"
ADMIN_OR_PROJECT_READER_OR_SERVICE_API = (
    "rule:admin_or_project_reader_or_service_api")

# Every rule is scoped to projects: a system-scoped token is refused.
PROJECT_SCOPE = ["project"]

_LEGACY_REASON = """
The placement policies now default to the secure RBAC personas (the admin
and service roles, and project readers for their own usages) with scope
checking.  The old default, the admin role alone, is deprecated and is
only evaluated while [oslo_policy] enforce_new_defaults is False.
"""

# The single pre-secure-RBAC default, OR-ed with the new defaults while
# enforce_new_defaults is off.  The name is the one operators' generated
# policy files carry.
LEGACY_ADMIN = policy.DeprecatedRule(
    name=ADMIN_API,
    check_str="role:admin",
    deprecated_reason=_LEGACY_REASON,
    deprecated_since=versionutils.deprecated.WALLABY,
)


def rules() -> list[policy.RuleDefault]:
    return [
        policy.RuleDefault(
            name="admin_api",
            check_str="role:admin",
            description="An administrator: the admin role.",
            scope_types=PROJECT_SCOPE,
        ),
        policy.RuleDefault(
            name="service_api",
            check_str="role:service",
            description=("Another OpenStack service (nova, neutron, ...) "
                         "calling placement: the service role."),
            scope_types=PROJECT_SCOPE,
            deprecated_rule=LEGACY_ADMIN,
        ),
        policy.RuleDefault(
            name="admin_or_service_api",
            check_str="role:admin or role:service",
            description=("An administrator or a service; the default of "
                         "nearly every placement API."),
            scope_types=PROJECT_SCOPE,
            deprecated_rule=LEGACY_ADMIN,
        ),
        policy.RuleDefault(
            name="project_reader_api",
            check_str="role:reader and project_id:%(project_id)s",
            description=("A reader of the project the request is about "
                         "(the target's project_id)."),
            deprecated_rule=LEGACY_ADMIN,
        ),
        policy.RuleDefault(
            name="admin_or_project_reader_or_service_api",
            check_str="role:admin or rule:project_reader_api or role:service",
            description=("An administrator, a service, or a reader of the "
                         "project the request is about."),
            scope_types=PROJECT_SCOPE,
            deprecated_rule=LEGACY_ADMIN,
        ),
    ]


def documented(
    name: str,
    description: str,
    *operations: tuple[str, str],
    check_str: str = ADMIN_OR_SERVICE_API,
) -> policy.DocumentedRuleDefault:
    """A project-scoped resource rule guarding ``(method, path)`` operations."""
    return policy.DocumentedRuleDefault(
        name=name,
        check_str=check_str,
        description=description,
        operations=[{"method": method, "path": path}
                    for method, path in operations],
        scope_types=PROJECT_SCOPE,
    )
