"""Policy enforcement with oslo.policy.

Rule names and defaults live in ``placement/policies/`` and the options of
``[oslo_policy]`` in ``placement/conf/policy.py``; this module owns the
enforcer: the rules registered, the
policy file operators supply (``policy_file``, YAML or JSON, re-read when
it changes), and the check that handlers make through ``req.authorize()``.

``[oslo_policy] enforce_new_defaults`` (oslo.policy's option) decides
whether the deprecated legacy default (``role:admin``) is still OR-ed into
the rules.  ``enforce_scope`` decides whether a token whose scope is not
one of a rule's ``scope_types`` (a system- or domain-scoped token: every
placement rule is for projects) is refused.  oslo.policy 6 dropped that
option and always checks scope; so that existing ``placement.conf`` files
keep meaning what they say, placement then registers the option itself
(default True, deprecated) and, when it is False, registers the rules
without scope types.  A scope mismatch is refused like any other policy
failure: 403.
"""

from __future__ import annotations

import copy
import logging
import warnings
import weakref
from typing import TYPE_CHECKING, Any

from oslo_config import cfg
from oslo_policy import policy as oslo_policy

from placement import policies
from placement.conf import policy as policy_conf

if TYPE_CHECKING:
    from placement.context import RequestContext

LOG = logging.getLogger(__name__)

# One enforcer per configuration object.  Keyed by id() because ConfigOpts
# is not hashable; the weak reference tells a live entry from a dead
# configuration whose id() was reused.
_ENFORCERS: dict[int, tuple[weakref.ref[cfg.ConfigOpts], oslo_policy.Enforcer]] = {}


def scope_enforced(conf: cfg.ConfigOpts) -> bool:
    return bool(conf.oslo_policy.enforce_scope)


def _registered_rules(conf: cfg.ConfigOpts) -> list[oslo_policy.RuleDefault]:
    rules = policies.list_rules()
    if scope_enforced(conf):
        return rules
    unscoped = []
    for rule in rules:
        rule = copy.copy(rule)
        rule.scope_types = None
        unscoped.append(rule)
    return unscoped


def _config_for_tools() -> cfg.ConfigOpts:
    """The configuration an oslopolicy-* command means.

    Those commands parse their own ``--config-file`` arguments into the
    global ``cfg.CONF`` before asking for the enforcer; use the same files
    (or placement's default ones) so that ``policy_file`` is found.
    """
    from placement import conf as placement_conf

    try:
        files = list(cfg.CONF.config_file or [])
    except (cfg.NoSuchOptError, cfg.NotInitializedError, AttributeError):
        files = []
    return placement_conf.load(default_config_files=files or None)


def get_enforcer(conf: cfg.ConfigOpts | None = None) -> oslo_policy.Enforcer:
    """The enforcer for ``conf``; also the ``oslo.policy.enforcer`` entry
    point that ``oslopolicy-policy-generator`` and friends call."""
    if conf is None:
        conf = _config_for_tools()
    entry = _ENFORCERS.get(id(conf))
    if entry is not None and entry[0]() is conf:
        return entry[1]
    enforcer = oslo_policy.Enforcer(conf)
    enforcer.register_defaults(_registered_rules(conf))
    _ENFORCERS[id(conf)] = (weakref.ref(conf), enforcer)
    return enforcer


def init(conf: cfg.ConfigOpts) -> oslo_policy.Enforcer:
    """Build the enforcer for ``conf`` and load the policy file now, so that
    a broken file stops the service at start rather than at the first
    request."""
    if policy_conf.oslo_policy_defines("enforce_scope") and not scope_enforced(conf):
        # Older oslo.policy warns on every scope mismatch it lets through.
        warnings.filterwarnings("ignore", message="Policy .* failed scope check",
                                category=UserWarning)
    enforcer = get_enforcer(conf)
    enforcer.load_rules()
    return enforcer


def authorize(ctx: RequestContext, rule: str, target: dict[str, Any] | None = None
              ) -> None:
    """Raise ``oslo_policy.PolicyNotAuthorized`` unless ``rule`` allows ``ctx``.

    The default target is the caller's own project and user.
    """
    enforcer = get_enforcer(ctx.config)
    if target is None:
        target = {"project_id": ctx.project_id, "user_id": ctx.user_id}
    try:
        enforcer.authorize(rule, target, ctx, do_raise=True)
    except oslo_policy.InvalidScope:
        LOG.debug("Policy check for %s refused: token scope is not one of %s",
                  rule, enforcer.registered_rules[rule].scope_types)
        raise oslo_policy.PolicyNotAuthorized(rule, target, {}) from None
    except oslo_policy.PolicyNotAuthorized:
        LOG.debug("Policy check for %s failed for user %s project %s roles %s",
                  rule, ctx.user_id, ctx.project_id, ctx.roles)
        raise


def anyone_may(conf: cfg.ConfigOpts, rule: str) -> bool:
    """Whether ``rule`` allows a request without any identity (an
    operator's ``"@"``): such requests need no token."""
    enforcer = get_enforcer(conf)
    anonymous: dict[str, Any] = {"roles": [], "project_id": None, "user_id": None,
                 "system_scope": None, "domain_id": None}
    try:
        return bool(enforcer.authorize(rule, {}, anonymous, do_raise=False))
    except oslo_policy.InvalidScope:
        return False
