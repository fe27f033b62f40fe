"""Policy enforcement with oslo.policy.

Rule names and defaults live in ``placement/policies/``; this module owns
the enforcer: which rules are registered, the policy file operators supply
(``[oslo_policy] policy_file``), and the check handlers call through
``req.authorize()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy

from placement import policies

if TYPE_CHECKING:
    from placement.context import RequestContext

_ENFORCERS: dict[int, oslo_policy.Enforcer] = {}


def register_opts(conf: cfg.ConfigOpts) -> None:
    policy_opts.set_defaults(conf, policy_file="policy.yaml")


def get_enforcer(conf: cfg.ConfigOpts | None = None) -> oslo_policy.Enforcer:
    """The enforcer for ``conf``; also the oslopolicy-* tools' entry point."""
    if conf is None:
        from placement import conf as placement_conf

        conf = placement_conf.load()
    enforcer = _ENFORCERS.get(id(conf))
    if enforcer is None:
        enforcer = oslo_policy.Enforcer(conf)
        enforcer.register_defaults(policies.list_rules())
        _ENFORCERS[id(conf)] = enforcer
    return enforcer


def init(conf: cfg.ConfigOpts) -> oslo_policy.Enforcer:
    enforcer = get_enforcer(conf)
    enforcer.load_rules()
    return enforcer


def authorize(ctx: RequestContext, rule: str, target: dict[str, Any] | None = None
              ) -> None:
    """Raise ``oslo_policy.PolicyNotAuthorized`` unless ``rule`` allows ``ctx``."""
    assert ctx.config is not None
    enforcer = get_enforcer(ctx.config)
    if target is None:
        target = {"project_id": ctx.project_id, "user_id": ctx.user_id}
    enforcer.authorize(rule, target, ctx, do_raise=True)
