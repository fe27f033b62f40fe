"""Policy rule names and their defaults, one module per resource.

The rule names are operator-facing (policy files refer to them), so they
are OpenStack Placement's, as are the defaults, the scope types and the
deprecated legacy default.  ``list_rules`` is the ``oslo.policy.policies``
entry point (namespace ``placement``) that ``oslopolicy-sample-generator``
and the other oslopolicy tools read.
"""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import (
    aggregate,
    allocation,
    allocation_candidate,
    base,
    baremetal_allocation,
    inventory,
    metrics,
    reshaper,
    resource_class,
    resource_provider,
    trait,
    usage,
)


def list_rules() -> list[policy.RuleDefault]:
    """Every rule, in the order the sample policy file lists them."""
    return [
        *base.rules(),
        *resource_provider.rules(),
        *resource_class.rules(),
        *inventory.rules(),
        *aggregate.rules(),
        *usage.rules(),
        *trait.rules(),
        *allocation.rules(),
        *allocation_candidate.rules(),
        *reshaper.rules(),
        *baremetal_allocation.rules(),
        *metrics.rules(),
    ]
