"""Policy enforcement with oslo.policy.

Rule names and defaults live in ``placement/policies/`` and the options of
``[oslo_policy]`` in ``placement/conf/policy.py``; this module owns the
enforcer: the rules registered, the
policy file operators supply (``policy_file``, YAML or JSON, re-read when
it changes), and the check that handlers make through ``req.authorize()``.

The enforcer remembers its decisions (:class:`Enforcer`): a check of the
same rule for the same credentials and target gives the same answer as
long as the rules are the same, and evaluating the rule tree again costs
more than the rest of a small request's policy work.  The rules are still
re-read as oslo.policy documents it (a changed policy file or
``policy_dirs`` applies to the next request: before every check
``Enforcer.load_rules`` compares the places oslo.policy would look with
what it saw last, and loads when they differ), and every change of them
forgets every decision.  The
decisions are process-wide state outside ``placement/kept/``, whose
docstring names them among what a worker keeps.

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

import collections.abc
import copy
import logging
import os
import warnings
import weakref
from typing import TYPE_CHECKING, Any, Hashable

from oslo_config import cfg
# The check classes (role:, rule:, and, or...) are defined there; only
# some are re-exported by oslo_policy.policy.
from oslo_policy import _checks
from oslo_policy import policy as oslo_policy

from placement import policies
from placement.conf import policy as policy_conf

if TYPE_CHECKING:
    from placement.context import RequestContext

LOG = logging.getLogger(__name__)

# How many decisions an enforcer remembers before it forgets them all (a
# bound on memory: the keys hold user and project ids).
DECISIONS_KEPT = 4096
# Checks whose answer depends on nothing but the rules, the target and the
# credentials; a rule using any other (an ``http:`` check asks a server) is
# never remembered.
_PURE_CHECKS = (_checks.TrueCheck, _checks.FalseCheck, _checks.RoleCheck,
                _checks.GenericCheck, _checks.RuleCheck, _checks.NotCheck,
                _checks.AndCheck, _checks.OrCheck)
# What a remembered decision says: allowed, refused, or refused because the
# token's scope is not one of the rule's.
_ALLOWED, _REFUSED, _OUT_OF_SCOPE = "allowed", "refused", "out of scope"


class Enforcer(oslo_policy.Enforcer):
    """oslo.policy's enforcer, remembering its decisions per rule set.

    Decisions are kept for one ``Rules`` object: oslo.policy builds a new
    one, or fills it through ``set_rules``, whenever the policy file or a
    policy directory changes, and both forget what was kept.  The kept
    rules object is referenced, so its identity cannot pass to another.
    """

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self._decisions: dict[Hashable, str] = {}
        self._decided_under: Any = None
        # What load_rules last found of the policy files (see _sources).
        self._sources_seen: Any = None
        self._candidates: tuple[Hashable, list[str], list[str]] | None = None
        super().__init__(conf)

    def load_rules(self, force_reload: bool = False) -> None:
        """oslo.policy's ``load_rules``, skipped while nothing it reads has
        changed: every candidate place of the policy file and directories
        as oslo.config's ``find_file`` would search them (whether each
        exists, and when it or a directory's files last changed), and the
        rules object with what is registered.  oslo.policy looks the files
        up anew on every call (a search of every configuration directory
        for each, and a pass over every registered rule), a tenth of a
        small request's work; a few ``stat`` calls tell the same.  The
        sources are read before the rules, so a change made while they
        load is seen by the next call."""
        try:
            sources = self._sources() if self.use_conf and not force_reload else None
        except Exception:  # oslo.config internals moved: always load
            sources = None
        if sources is not None and sources == self._sources_seen:
            return
        super().load_rules(force_reload)
        if sources is not None:
            # The policy file found, and the rules, as loading left them
            # (oslo.policy keeps the path of the file once found).
            self._sources_seen = (self.policy_path, *sources[1:-1],
                                  self._rules_state())
        else:
            self._sources_seen = None

    def _rules_state(self) -> tuple[int, int, int]:
        return (id(self.rules), len(self.rules), len(self.registered_rules))

    def _sources(self) -> tuple[Hashable, ...]:
        names = (self.policy_file, tuple(self.conf.oslo_policy.policy_dirs))
        if self._candidates is None or self._candidates[0] != (
                names, tuple(self.conf.config_file)):
            # The directories find_file searches, in its order.
            namespace = self.conf._namespace
            if namespace is None:
                raise cfg.NotInitializedError()
            dirs = [cfg._fixpath(d) for d in namespace._config_dirs or []]
            dirs += [os.path.dirname(cfg._fixpath(f)) for f in reversed(self.conf.config_file)]
            dirs += cfg._get_config_dirs(self.conf.project)
            files = [os.path.join(d, self.policy_file) for d in dirs]
            folders = [os.path.join(d, name) for name in names[1] for d in dirs]
            self._candidates = ((names, tuple(self.conf.config_file)), files, folders)
        _key, files, folders = self._candidates
        state: list[Hashable] = [self.policy_path]
        state.extend(_stamp(path) for path in files)
        for folder in folders:
            stamp = _stamp(folder)
            state.append(stamp)
            if stamp is not None and os.path.isdir(folder):
                state.append(tuple(_stamp(os.path.join(folder, entry))
                                   for entry in sorted(os.listdir(folder))))
        state.append(self._rules_state())
        return tuple(state)

    def set_rules(self, *args: Any, **kwargs: Any) -> None:
        super().set_rules(*args, **kwargs)
        self._decisions = {}

    def decisions(self) -> dict[Hashable, str]:
        """The decisions made under the current rules (checked for changes
        of the policy files first, as ``enforce`` does)."""
        self.load_rules()
        if self._decided_under is not self.rules:
            self._decisions = {}
            self._decided_under = self.rules
        elif len(self._decisions) >= DECISIONS_KEPT:
            self._decisions = {}
        return self._decisions

    def pure(self, rule: str) -> bool:
        """Whether ``rule``'s answer depends on the rules, the target and
        the credentials only."""
        pending: list[Any] = [self.rules.get(rule)]
        seen: set[str] = {rule}
        while pending:
            check = pending.pop()
            if check is None:
                continue  # a missing rule fails closed, always
            if type(check) not in _PURE_CHECKS:
                return False
            if isinstance(check, _checks.RuleCheck):
                if check.match not in seen:
                    seen.add(check.match)
                    pending.append(self.rules.get(check.match))
            elif isinstance(check, _checks.NotCheck):
                pending.append(check.rule)
            elif isinstance(check, (_checks.AndCheck, _checks.OrCheck)):
                pending.extend(check.rules)
        return True


def _stamp(path: str) -> int | None:
    """When ``path`` last changed, None when it does not exist."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _frozen(value: Any) -> Hashable:
    """``value`` (credentials or a target: mappings, lists, scalars) as a
    hashable key; TypeError for anything else."""
    if value is None or type(value) in _SCALARS:
        return value  # type: ignore[no-any-return]
    # collections.abc's class, not typing's alias: isinstance against the
    # alias runs Python code of its own, a tenth of a request's policy check.
    if isinstance(value, collections.abc.Mapping):
        # In the mapping's own order: another order is a miss, not an error.
        # Scalars (nearly every value) are taken without a call.
        return tuple([(key, item if item is None or type(item) in _SCALARS
                       else _frozen(item)) for key, item in value.items()])
    if isinstance(value, (list, tuple)):
        return tuple([_frozen(item) for item in value])
    hash(value)
    return value  # type: ignore[no-any-return]


_SCALARS = frozenset({str, int, bool, float})


# One enforcer per configuration object.  Keyed by id() because ConfigOpts
# is not hashable; the weak reference tells a live entry from a dead
# configuration whose id() was reused.
_ENFORCERS: dict[int, tuple[weakref.ref[cfg.ConfigOpts], Enforcer]] = {}


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


def get_enforcer(conf: cfg.ConfigOpts | None = None) -> Enforcer:
    """The enforcer for ``conf``; also the ``oslo.policy.enforcer`` entry
    point that ``oslopolicy-policy-generator`` and friends call."""
    if conf is None:
        conf = _config_for_tools()
    entry = _ENFORCERS.get(id(conf))
    if entry is not None and entry[0]() is conf:
        return entry[1]
    enforcer = Enforcer(conf)
    enforcer.register_defaults(_registered_rules(conf))
    _ENFORCERS[id(conf)] = (weakref.ref(conf), enforcer)
    return enforcer


def init(conf: cfg.ConfigOpts) -> Enforcer:
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
    decisions = enforcer.decisions()
    creds = ctx.to_policy_values()
    try:
        key: Hashable = (rule, _frozen(target), _frozen(creds))
    except TypeError:  # something unhashable: decide, and do not remember
        key = None
    decision = decisions.get(key) if key is not None else None
    if decision is None:
        decision = _decide(enforcer, rule, target, ctx)
        if key is not None and enforcer.pure(rule):
            decisions[key] = decision
    if decision == _ALLOWED:
        return
    if decision == _OUT_OF_SCOPE:
        LOG.debug("Policy check for %s refused: token scope is not one of %s",
                  rule, enforcer.registered_rules[rule].scope_types)
    else:
        LOG.debug("Policy check for %s failed for user %s project %s roles %s",
                  rule, ctx.user_id, ctx.project_id, ctx.roles)
    raise oslo_policy.PolicyNotAuthorized(rule, target, dict(creds))


def _decide(enforcer: Enforcer, rule: str, target: dict[str, Any],
            ctx: RequestContext) -> str:
    """oslo.policy's own answer."""
    try:
        enforcer.authorize(rule, target, ctx, do_raise=True)
    except oslo_policy.InvalidScope:
        return _OUT_OF_SCOPE
    except oslo_policy.PolicyNotAuthorized:
        return _REFUSED
    return _ALLOWED


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
