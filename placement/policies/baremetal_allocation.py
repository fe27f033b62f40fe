"""Policy rules of the bare-metal allocation API, under Ironic's names.

The names are Ironic's (``baremetal:allocation:*``), so that operators'
policy files carry over.  The defaults follow this service's personas
rather than Ironic's system-scoped ones: an administrator or a service
sees and manages every allocation; a member of a project creates
allocations owned by that project and manages those, and a reader of a
project sees them.  Handlers pass the allocation's owner as the target
``allocation.owner``.
"""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

GET = "baremetal:allocation:get"
LIST = "baremetal:allocation:list"
LIST_ALL = "baremetal:allocation:list_all"
CREATE = "baremetal:allocation:create"
CREATE_RESTRICTED = "baremetal:allocation:create_restricted"
UPDATE = "baremetal:allocation:update"
DELETE = "baremetal:allocation:delete"

_ALLOCATIONS = "/v1/allocations"
_ALLOCATION = "/v1/allocations/{allocation_ident}"
_NODE_ALLOCATION = "/v1/nodes/{node_ident}/allocation"
_OWNER_READER = ("%s or (role:reader and project_id:%%(allocation.owner)s)"
                 % base.ADMIN_OR_SERVICE_API)
_OWNER_MEMBER = ("%s or (role:member and project_id:%%(allocation.owner)s)"
                 % base.ADMIN_OR_SERVICE_API)


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        base.documented(GET, "Show a bare-metal allocation.", ("GET", _ALLOCATION),
                        ("GET", _NODE_ALLOCATION), check_str=_OWNER_READER),
        base.documented(LIST, "List the bare-metal allocations of the "
                        "caller's project.", ("GET", _ALLOCATIONS),
                        check_str=base.ADMIN_OR_SERVICE_API + " or role:reader"),
        base.documented(LIST_ALL, "List the bare-metal allocations of every "
                        "project.", ("GET", _ALLOCATIONS)),
        base.documented(CREATE, "Create a bare-metal allocation for the "
                        "caller's project.", ("POST", _ALLOCATIONS),
                        check_str=base.ADMIN_OR_SERVICE_API + " or role:member"),
        base.documented(CREATE_RESTRICTED, "Create a bare-metal allocation "
                        "owned by any project, or by none.", ("POST", _ALLOCATIONS)),
        base.documented(UPDATE, "Change the name or extra of a bare-metal "
                        "allocation.", ("PATCH", _ALLOCATION),
                        check_str=_OWNER_MEMBER),
        base.documented(DELETE, "Delete a bare-metal allocation, freeing its "
                        "node.", ("DELETE", _ALLOCATION), ("DELETE", _NODE_ALLOCATION),
                        check_str=_OWNER_MEMBER),
    ]
