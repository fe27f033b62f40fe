"""Policy rules, their defaults, the enforcer options and the oslopolicy tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Iterator

import pytest
from oslo_config import cfg
from oslo_policy import policy as oslo_policy

from placement import conf as placement_conf
from placement import policies, policy
from placement.context import RequestContext

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADMIN_OR_SERVICE = "rule:admin_or_service_api"

# OpenStack Placement's rule names and default check strings.
RESOURCE_RULES = {
    "placement:resource_providers:list": ADMIN_OR_SERVICE,
    "placement:resource_providers:create": ADMIN_OR_SERVICE,
    "placement:resource_providers:show": ADMIN_OR_SERVICE,
    "placement:resource_providers:update": ADMIN_OR_SERVICE,
    "placement:resource_providers:delete": ADMIN_OR_SERVICE,
    "placement:resource_classes:list": ADMIN_OR_SERVICE,
    "placement:resource_classes:create": ADMIN_OR_SERVICE,
    "placement:resource_classes:show": ADMIN_OR_SERVICE,
    "placement:resource_classes:update": ADMIN_OR_SERVICE,
    "placement:resource_classes:delete": ADMIN_OR_SERVICE,
    "placement:resource_providers:inventories:list": ADMIN_OR_SERVICE,
    "placement:resource_providers:inventories:create": ADMIN_OR_SERVICE,
    "placement:resource_providers:inventories:show": ADMIN_OR_SERVICE,
    "placement:resource_providers:inventories:update": ADMIN_OR_SERVICE,
    "placement:resource_providers:inventories:delete": ADMIN_OR_SERVICE,
    "placement:resource_providers:aggregates:list": ADMIN_OR_SERVICE,
    "placement:resource_providers:aggregates:update": ADMIN_OR_SERVICE,
    "placement:resource_providers:usages": ADMIN_OR_SERVICE,
    "placement:usages": "rule:admin_or_project_reader_or_service_api",
    "placement:traits:list": ADMIN_OR_SERVICE,
    "placement:traits:show": ADMIN_OR_SERVICE,
    "placement:traits:update": ADMIN_OR_SERVICE,
    "placement:traits:delete": ADMIN_OR_SERVICE,
    "placement:resource_providers:traits:list": ADMIN_OR_SERVICE,
    "placement:resource_providers:traits:update": ADMIN_OR_SERVICE,
    "placement:resource_providers:traits:delete": ADMIN_OR_SERVICE,
    "placement:allocations:manage": ADMIN_OR_SERVICE,
    "placement:allocations:list": ADMIN_OR_SERVICE,
    "placement:allocations:update": ADMIN_OR_SERVICE,
    "placement:allocations:delete": ADMIN_OR_SERVICE,
    "placement:resource_providers:allocations:list": ADMIN_OR_SERVICE,
    "placement:allocation_candidates:list": ADMIN_OR_SERVICE,
    "placement:reshaper:reshape": "rule:service_api",
}
# The bare-metal API's rules: Ironic's names, this service's personas.
_OWNER = "project_id:%(allocation.owner)s"
BAREMETAL_RULES = {
    "baremetal:allocation:get": ADMIN_OR_SERVICE + " or (role:reader and %s)" % _OWNER,
    "baremetal:allocation:list": ADMIN_OR_SERVICE + " or role:reader",
    "baremetal:allocation:list_all": ADMIN_OR_SERVICE,
    "baremetal:allocation:create": ADMIN_OR_SERVICE + " or role:member",
    "baremetal:allocation:create_restricted": ADMIN_OR_SERVICE,
    "baremetal:allocation:update": ADMIN_OR_SERVICE + " or (role:member and %s)" % _OWNER,
    "baremetal:allocation:delete": ADMIN_OR_SERVICE + " or (role:member and %s)" % _OWNER,
}
# The operator's views (GET /metrics, GET /capacity): not Placement's.
METRICS_RULES = {"placement:metrics": "rule:admin_api"}
BASE_RULES = {
    "admin_api": "role:admin",
    "service_api": "role:service",
    "admin_or_service_api": "role:admin or role:service",
    "project_reader_api": "role:reader and project_id:%(project_id)s",
    "admin_or_project_reader_or_service_api":
        "role:admin or rule:project_reader_api or role:service",
}


def _rules() -> dict[str, oslo_policy.RuleDefault]:
    return {rule.name: rule for rule in policies.list_rules()}


def test_every_rule_and_its_default() -> None:
    rules = _rules()
    assert {name: rule.check_str for name, rule in rules.items()} == {
        **BASE_RULES, **RESOURCE_RULES, **BAREMETAL_RULES, **METRICS_RULES}


# Test ids must not contain ":", which gabbi's pytest plugin takes for its own.
def _id(value: Any) -> str:
    return str(value).replace(":", ".")


@pytest.mark.parametrize("name", sorted(RESOURCE_RULES), ids=_id)
def test_resource_rules_are_documented_and_project_scoped(name: str) -> None:
    rule = _rules()[name]
    assert isinstance(rule, oslo_policy.DocumentedRuleDefault)
    assert rule.scope_types == ["project"]
    assert rule.description
    assert all(op["method"] in {"GET", "PUT", "POST", "DELETE"}
               and op["path"].startswith("/") for op in rule.operations)


@pytest.mark.parametrize("name", [
    "service_api", "admin_or_service_api", "project_reader_api",
    "admin_or_project_reader_or_service_api"])
def test_base_rules_fall_back_to_the_legacy_admin(name: str) -> None:
    deprecated = _rules()[name].deprecated_rule
    assert deprecated is not None
    assert deprecated.check_str == "role:admin"


def test_rule_constants_name_registered_rules() -> None:
    names = set(_rules())
    modules = [policies.resource_provider, policies.resource_class,
               policies.inventory, policies.aggregate, policies.usage,
               policies.trait, policies.allocation,
               policies.allocation_candidate, policies.reshaper]
    constants = {value for module in modules for key, value in vars(module).items()
                 if key.isupper() and isinstance(value, str)
                 and value.startswith("placement:")}
    assert constants == set(RESOURCE_RULES)
    assert constants <= names


def _conf(tmp_path: Any, **oslo_policy_options: Any) -> cfg.ConfigOpts:
    conf = placement_conf.load(default_config_files=[])
    conf.set_override("policy_dirs", [], group="oslo_policy")
    conf.set_override("policy_file", str(tmp_path / "absent.yaml"),
                      group="oslo_policy")
    for name, value in oslo_policy_options.items():
        conf.set_override(name, value, group="oslo_policy")
    return conf


def _ctx(conf: cfg.ConfigOpts, roles: list[str], project: str | None = "p1",
         system: str | None = None) -> RequestContext:
    return RequestContext(user_id="u1", project_id=None if system else project,
                          roles=roles, system_scope=system, config=conf,
                          db=None, overwrite=False)  # policy reads no database


def _allowed(ctx: RequestContext, rule: str,
             target: dict[str, Any] | None = None) -> bool:
    try:
        policy.authorize(ctx, rule, target)
    except oslo_policy.PolicyNotAuthorized:
        return False
    return True


@pytest.fixture
def conf(tmp_path: Any) -> Iterator[cfg.ConfigOpts]:
    conf = _conf(tmp_path)
    yield conf
    conf.reset()


@pytest.mark.parametrize("roles,allowed", [
    (["admin"], True),
    (["service"], True),
    (["admin", "member", "reader"], True),
    (["member", "reader"], False),
    (["reader"], False),
    ([], False),
])
def test_default_resource_rule(conf: cfg.ConfigOpts, roles: list[str],
                               allowed: bool) -> None:
    assert _allowed(_ctx(conf, roles), "placement:resource_providers:list") is allowed


@pytest.mark.parametrize("roles,project,target,allowed", [
    (["reader"], "p1", "p1", True),
    (["reader"], "p1", "p2", False),
    (["member"], "p1", "p1", False),
    (["admin"], "p1", "p2", True),
    (["service"], "p9", "p2", True),
    (["reader"], "p1", None, False),
])
def test_total_usages_target_the_project_asked_about(
        conf: cfg.ConfigOpts, roles: list[str], project: str,
        target: str | None, allowed: bool) -> None:
    assert _allowed(_ctx(conf, roles, project), "placement:usages",
                    {"project_id": target}) is allowed


def test_scope_mismatch_is_a_refusal(conf: cfg.ConfigOpts) -> None:
    # oslo.policy raises InvalidScope; placement turns it into a refusal.
    ctx = _ctx(conf, ["admin"], system="all")
    with pytest.raises(oslo_policy.PolicyNotAuthorized):
        policy.authorize(ctx, "placement:resource_providers:list")


def test_enforce_scope_off_allows_system_tokens(tmp_path: Any) -> None:
    conf = _conf(tmp_path, enforce_scope=False)
    try:
        assert _allowed(_ctx(conf, ["admin"], system="all"),
                        "placement:resource_providers:list")
        assert not _allowed(_ctx(conf, ["reader"], system="all"),
                            "placement:resource_providers:list")
    finally:
        conf.reset()


def test_enforce_scope_is_an_option_whatever_oslo_policy_version(
        conf: cfg.ConfigOpts) -> None:
    assert conf.oslo_policy.enforce_scope is True
    assert conf.oslo_policy.enforce_new_defaults is True


@pytest.mark.parametrize("rule,target", [
    ("service_api", None),
    ("project_reader_api", {"project_id": "another-project"}),
])
def test_legacy_admin_only_without_new_defaults(
        tmp_path: Any, rule: str, target: dict[str, Any] | None) -> None:
    # Base rules whose new default leaves an admin out.
    strict = _conf(tmp_path)
    legacy = _conf(tmp_path, enforce_new_defaults=False)
    try:
        assert not _allowed(_ctx(strict, ["admin"]), rule, target)
        assert _allowed(_ctx(legacy, ["admin"]), rule, target)
        assert not _allowed(_ctx(legacy, ["member"]), rule, target)
    finally:
        strict.reset()
        legacy.reset()


def test_operator_rules_get_no_legacy_fallback(tmp_path: Any) -> None:
    # A rule the operator wrote is taken as written, legacy or not.
    path = tmp_path / "policy.yaml"
    path.write_text('"admin_or_service_api": "role:service"\n')
    legacy = _conf(tmp_path, policy_file=str(path), enforce_new_defaults=False)
    try:
        assert not _allowed(_ctx(legacy, ["admin"]), "placement:traits:list")
        assert _allowed(_ctx(legacy, ["service"]), "placement:traits:list")
    finally:
        legacy.reset()


@pytest.mark.parametrize("name,text", [
    ("policy.yaml", '"placement:traits:list": "role:trait_reader"\n'),
    ("policy.json", json.dumps({"placement:traits:list": "role:trait_reader"})),
], ids=["yaml", "json"])
def test_policy_file_overrides_a_rule(tmp_path: Any, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    conf = _conf(tmp_path, policy_file=str(path))
    try:
        policy.init(conf)
        assert _allowed(_ctx(conf, ["trait_reader"]), "placement:traits:list")
        assert not _allowed(_ctx(conf, ["admin"]), "placement:traits:list")
        # Other rules keep their defaults.
        assert _allowed(_ctx(conf, ["admin"]), "placement:traits:show")
        assert not _allowed(_ctx(conf, ["trait_reader"]), "placement:traits:show")
    finally:
        conf.reset()


def test_policy_file_changes_are_picked_up(tmp_path: Any) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text('"placement:traits:list": "!"\n')
    conf = _conf(tmp_path, policy_file=str(path))
    try:
        policy.init(conf)
        assert not _allowed(_ctx(conf, ["admin"]), "placement:traits:list")
        path.write_text('"placement:traits:list": "@"\n')
        stamp = time.time() + 5
        os.utime(path, (stamp, stamp))
        assert _allowed(_ctx(conf, []), "placement:traits:list")
    finally:
        conf.reset()


def test_one_enforcer_per_configuration(tmp_path: Any) -> None:
    first = _conf(tmp_path)
    second = _conf(tmp_path)
    try:
        assert policy.get_enforcer(first) is policy.get_enforcer(first)
        assert policy.get_enforcer(first) is not policy.get_enforcer(second)
    finally:
        first.reset()
        second.reset()


def test_unknown_rule_is_a_programming_error(conf: cfg.ConfigOpts) -> None:
    with pytest.raises(oslo_policy.PolicyNotRegistered):
        policy.authorize(_ctx(conf, ["admin"]), "placement:no_such_rule")


def _tool(name: str, *args: str, cwd: str | None = None) -> str:
    script = os.path.join(os.path.dirname(sys.executable), name)
    result = subprocess.run([script, "--namespace", "placement", *args],
                            capture_output=True, text=True, cwd=cwd, check=True,
                            timeout=120)
    return result.stdout


def test_sample_policy_file_is_current() -> None:
    sample = os.path.join(REPO, "etc", "placement", "policy.yaml.sample")
    with open(sample) as handle:
        assert handle.read() == _tool("oslopolicy-sample-generator")


def test_policy_generator_shows_the_operator_file(tmp_path: Any) -> None:
    (tmp_path / "policy.yaml").write_text('"placement:traits:list": "role:x"\n')
    (tmp_path / "placement.conf").write_text(
        "[oslo_policy]\npolicy_file = policy.yaml\n")
    effective = _tool("oslopolicy-policy-generator", "--config-file",
                      str(tmp_path / "placement.conf"), cwd=str(tmp_path))
    assert '"placement:traits:list": "role:x"' in effective
    assert ('"placement:resource_providers:list": "rule:admin_or_service_api"'
            in effective)


def _oslo_policy_allows(enforcer: oslo_policy.Enforcer, ctx: RequestContext,
                        rule: str, target: dict[str, Any]) -> bool:
    """oslo.policy's own answer, from an enforcer that remembers nothing."""
    try:
        return bool(enforcer.authorize(rule, target, ctx, do_raise=True))
    except (oslo_policy.PolicyNotAuthorized, oslo_policy.InvalidScope):
        return False


@pytest.mark.parametrize("enforce_new_defaults", [True, False])
def test_remembered_decisions_are_oslo_policys(tmp_path: Any,
                                               enforce_new_defaults: bool) -> None:
    conf = _conf(tmp_path, enforce_new_defaults=enforce_new_defaults)
    personas = [_ctx(conf, ["admin"]), _ctx(conf, ["service"]),
                _ctx(conf, ["reader"]), _ctx(conf, ["member"], project="p2"),
                _ctx(conf, []), _ctx(conf, ["admin"], system="all")]
    targets = [None, {"project_id": "p2", "user_id": "u1"},
               {"allocation": {"owner": "p1"}}]
    reference = oslo_policy.Enforcer(conf)
    reference.register_defaults(policy._registered_rules(conf))
    try:
        policy.init(conf)
        for _round in range(2):  # the second round answers from memory
            for name in _rules():
                for ctx in personas:
                    for target in targets:
                        expected = _oslo_policy_allows(
                            reference, ctx, name, target or {
                                "project_id": ctx.project_id, "user_id": ctx.user_id})
                        assert _allowed(ctx, name, target) == expected, (
                            name, ctx.roles, target)
        assert policy.get_enforcer(conf).decisions()
    finally:
        conf.reset()


def test_policy_dir_changes_are_picked_up(tmp_path: Any) -> None:
    directory = tmp_path / "policy.d"
    directory.mkdir()
    conf = _conf(tmp_path)
    conf.set_override("policy_dirs", [str(directory)], group="oslo_policy")
    try:
        policy.init(conf)
        assert _allowed(_ctx(conf, ["admin"]), "placement:traits:list")
        assert _allowed(_ctx(conf, ["admin"]), "placement:traits:list")
        rule_file = directory / "traits.yaml"
        rule_file.write_text('"placement:traits:list": "!"\n')
        stamp = time.time() + 5
        os.utime(rule_file, (stamp, stamp))
        os.utime(directory, (stamp, stamp))
        assert not _allowed(_ctx(conf, ["admin"]), "placement:traits:list")
    finally:
        conf.reset()


def test_a_rule_asking_a_server_is_never_remembered(tmp_path: Any) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text('"placement:traits:list": "http://127.0.0.1:9/check"\n'
                    '"placement:traits:show": "role:admin or rule:placement:traits:list"\n'
                    '"placement:usages": "role:admin"\n')
    conf = _conf(tmp_path, policy_file=str(path))
    try:
        enforcer = policy.init(conf)
        assert not enforcer.pure("placement:traits:list")
        assert not enforcer.pure("placement:traits:show")
        assert enforcer.pure("placement:usages")
        assert enforcer.pure("placement:no_such_rule")
    finally:
        conf.reset()


def test_a_policy_file_created_after_start_is_picked_up(tmp_path: Any) -> None:
    # A relative policy_file is searched beside the configuration files;
    # one that appears there later applies from the next check on.
    (tmp_path / "placement.conf").write_text("[oslo_policy]\npolicy_file = policy.yaml\n")
    conf = placement_conf.load(["--config-file", str(tmp_path / "placement.conf")],
                               default_config_files=[])
    conf.set_override("policy_dirs", [], group="oslo_policy")
    try:
        policy.init(conf)
        assert _allowed(_ctx(conf, ["admin"]), "placement:traits:list")
        (tmp_path / "policy.yaml").write_text('"placement:traits:list": "!"\n')
        assert not _allowed(_ctx(conf, ["admin"]), "placement:traits:list")
    finally:
        conf.reset()


def test_unchanged_policy_files_are_not_looked_up_again(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text('"placement:traits:list": "role:trait_reader"\n')
    conf = _conf(tmp_path, policy_file=str(path))
    loads = []
    oslo_load_rules = oslo_policy.Enforcer.load_rules

    def counted(self: Any, force_reload: bool = False) -> None:
        loads.append(force_reload)
        oslo_load_rules(self, force_reload)

    monkeypatch.setattr(oslo_policy.Enforcer, "load_rules", counted)
    try:
        policy.init(conf)
        assert loads == [False]
        for _ in range(3):
            assert _allowed(_ctx(conf, ["trait_reader"]), "placement:traits:list")
            assert not _allowed(_ctx(conf, ["admin"]), "placement:traits:list")
        assert loads == [False]
        # Rules set from elsewhere are completed with the defaults again.
        policy.get_enforcer(conf).set_rules(
            oslo_policy.Rules.load('{"placement:traits:list": "@"}'),
            overwrite=True, use_conf=True)
        assert _allowed(_ctx(conf, []), "placement:traits:list")
        assert _allowed(_ctx(conf, ["admin"]), "placement:traits:show")
        assert loads == [False, False]
    finally:
        conf.reset()
