"""The ``[oslo_policy]`` group: oslo.policy's own options, as placement
sets them.

oslo.policy defines the group; placement changes the default policy file
name to ``policy.yaml`` and, with oslo.policy 6 and later, which dropped
``enforce_scope``, defines that option itself so that existing
configuration files keep meaning what they say (``placement/policy.py``
explains what it does).  Kept apart from the enforcer so that loading the
configuration never imports policy enforcement.
"""

from __future__ import annotations

from oslo_config import cfg
from oslo_policy import opts as policy_opts

GROUP = "oslo_policy"

# Only registered when the installed oslo.policy no longer defines it.
ENFORCE_SCOPE_OPT = cfg.BoolOpt(
    "enforce_scope",
    default=True,
    deprecated_for_removal=True,
    deprecated_reason=(
        "Kept for configuration files written for older oslo.policy "
        "releases, which defined it; scope checks are meant to be always on."
    ),
    help=(
        "Refuse requests whose token scope (system, domain or project) is "
        "not one of the scope types of the rule being checked.  Every "
        "placement rule is scoped to projects.  If False, only the check "
        "strings are evaluated."
    ),
)


def oslo_policy_defines(name: str) -> bool:
    """Whether the installed oslo.policy defines option ``name`` itself."""
    return any(opt.name == name
               for _group, opts in policy_opts.list_opts() for opt in opts)


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register ``[oslo_policy]`` with placement's default policy file name."""
    policy_opts.set_defaults(conf, policy_file="policy.yaml")
    if not oslo_policy_defines("enforce_scope"):
        conf.register_opt(ENFORCE_SCOPE_OPT, group=GROUP)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """What the sample configuration documents beside oslo.policy's own."""
    if oslo_policy_defines("enforce_scope"):
        return []
    return [(GROUP, [ENFORCE_SCOPE_OPT])]
