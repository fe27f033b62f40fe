"""Policy rule names and their defaults, one module per resource.

The rule names are operator-facing (policy files refer to them), so they are
those of OpenStack Placement.
"""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base


def list_rules() -> list[policy.RuleDefault]:
    """Every rule, for the enforcer and for oslopolicy-sample-generator."""
    return [*base.rules()]
