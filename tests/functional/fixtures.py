"""Gabbi fixtures: a fresh database and application per YAML file.

Every YAML file under ``gabbits/`` names its fixtures (``fixtures:
[APIFixture]``).  ``module_for(backend)`` gives gabbi a module of fixture
classes bound to one database backend, so the same YAML runs on SQLite,
PostgreSQL and MySQL.

Fixture classes:

``APIFixture``
    noauth2, default policy, a new migrated database.
``LegacyPolicyFixture``
    as APIFixture with ``[oslo_policy] enforce_new_defaults = False`` and
    ``enforce_scope = False``: the deprecated rules still apply.
``OpenPolicyFixture``
    as APIFixture with an operator policy file (YAML) that opens every
    ``placement:*`` rule to everyone.
``ClosedPolicyFixture``
    as APIFixture with an operator policy file (JSON) that closes every
    ``placement:*`` rule to everyone, admins included.
``OperatorRolePolicyFixture``
    as APIFixture with an operator policy file redefining the base rule
    ``admin_or_service_api`` as ``role:placement_operator``.
``CORSFixture``
    as APIFixture with ``[cors] allowed_origin = http://valid.example.com``.
``BehindProxyFixture``
    as APIFixture with ``[oslo_middleware] enable_proxy_headers_parsing =
    True``.
``SmallBodyLimitFixture``
    as APIFixture with ``[oslo_middleware] max_request_body_size = 128``.
``RandomizedCandidatesFixture`` / ``CappedCandidatesFixture``
    ``[placement] randomize_allocation_candidates = True`` /
    ``max_allocation_candidates = 2``.
``BreadthFirstCandidatesFixture``
    ``[placement] max_allocation_candidates = 2`` and
    ``allocation_candidates_generation_strategy = breadth-first``.
``BaremetalFixture``
    as APIFixture, with the bare-metal API (``placement.wsgi.baremetal``)
    on the same database under ``/baremetal``: the YAML creates nodes
    through the Placement API and allocates them through Ironic's.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import types
from typing import Any, Callable, Iterable

from gabbi import fixture
from oslo_config import cfg

from placement import app, conf as placement_conf
from placement.baremetal import app as baremetal_app
from placement.db import migration
from placement.db.api import Database
from tests import backends
from tests.functional import openapi_check

WSGIApp = Callable[..., Iterable[bytes]]


class _CurrentApp:
    """The WSGI app gabbi talks to: whichever the running fixture built."""

    app: WSGIApp | None = None

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        assert self.app is not None, "no gabbi fixture is running"
        return self.app(environ, start_response)


CURRENT = _CurrentApp()


def intercept() -> WSGIApp:
    return CURRENT


def make_conf(url: str, **overrides: dict[str, Any]) -> cfg.ConfigOpts:
    """A configuration for tests: noauth2 on ``url``, plus overrides.

    ``overrides`` maps group names to ``{option: value}``.
    """
    conf = placement_conf.load(default_config_files=[])
    conf.set_override("auth_strategy", "noauth2", group="api")
    conf.set_override("connection", url, group="placement_database")
    _register_middleware_opts(conf)
    for group, options in overrides.items():
        for name, value in options.items():
            conf.set_override(name, value, group=group)
    return conf


def _register_middleware_opts(conf: cfg.ConfigOpts) -> None:
    """The oslo.middleware option groups, which the middleware registers
    only when the application is built, so that fixtures can override them."""
    from oslo_middleware import cors, http_proxy_to_wsgi, sizelimit

    conf.register_opts(cors.OPTS, group="cors")
    conf.register_opts(http_proxy_to_wsgi.OPTS, group="oslo_middleware")
    conf.register_opts(sizelimit.OPTS, group="oslo_middleware")


class APIFixture(fixture.GabbiFixture):
    BACKEND = "sqlite"

    def overrides(self, workdir: str) -> dict[str, dict[str, Any]]:
        """Config groups and options this fixture sets."""
        return {}

    def start_fixture(self) -> None:
        self._stack = contextlib.ExitStack()
        backends.require(self.BACKEND)
        url = self._stack.enter_context(backends.fresh_database(self.BACKEND))
        workdir = self._stack.enter_context(tempfile.TemporaryDirectory())
        self.conf = make_conf(url, **self.overrides(workdir))
        self.db = Database(self.conf)
        self._stack.callback(self.db.dispose)
        migration.upgrade(self.db)
        # Every response is checked against the OpenAPI document.
        CURRENT.app = openapi_check.ResponseChecker(
            app.build_app(self.conf, self.db))
        # Values gabbi YAML files can use as $ENVIRON['...'].
        os.environ["BACKEND"] = self.BACKEND

    def stop_fixture(self) -> None:
        CURRENT.app = None
        self._stack.close()
        # Overrides of options in groups placement.conf registers as shared
        # OptGroup objects are visible to every later ConfigOpts; drop them
        # so they do not leak into the next file's configuration.
        self.conf.reset()


class _PrefixDispatch:
    """Placement at the root, another application under a path prefix,
    as a deployment behind one proxy would serve them."""

    def __init__(self, placement: WSGIApp, prefix: str, other: WSGIApp) -> None:
        self.placement = placement
        self.prefix = prefix
        self.other = other

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path != self.prefix and not path.startswith(self.prefix + "/"):
            return self.placement(environ, start_response)
        environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + self.prefix
        environ["PATH_INFO"] = path[len(self.prefix):]
        return self.other(environ, start_response)


class BaremetalFixture(APIFixture):
    def start_fixture(self) -> None:
        super().start_fixture()
        assert CURRENT.app is not None
        CURRENT.app = _PrefixDispatch(CURRENT.app, "/baremetal",
                                      baremetal_app.build_app(self.conf, self.db))


class LegacyPolicyFixture(APIFixture):
    def overrides(self, workdir: str) -> dict[str, dict[str, Any]]:
        return {"oslo_policy": {"enforce_new_defaults": False,
                                "enforce_scope": False}}


def _policy_file(workdir: str, name: str, text: str) -> str:
    path = os.path.join(workdir, name)
    with open(path, "w") as handle:
        handle.write(text)
    return path


def _resource_rule_names() -> list[str]:
    from placement import policies

    return [rule.name for rule in policies.list_rules()
            if rule.name.startswith("placement:")]


class OpenPolicyFixture(APIFixture):
    def overrides(self, workdir: str) -> dict[str, dict[str, Any]]:
        text = "".join('"%s": "@"\n' % name for name in _resource_rule_names())
        path = _policy_file(workdir, "policy.yaml", text)
        return {"oslo_policy": {"policy_file": path}}


class ClosedPolicyFixture(APIFixture):
    def overrides(self, workdir: str) -> dict[str, dict[str, Any]]:
        text = json.dumps({name: "!" for name in _resource_rule_names()})
        path = _policy_file(workdir, "policy.json", text)
        return {"oslo_policy": {"policy_file": path}}


class OperatorRolePolicyFixture(APIFixture):
    def overrides(self, workdir: str) -> dict[str, dict[str, Any]]:
        path = _policy_file(workdir, "policy.yaml",
                            '"admin_or_service_api": "role:placement_operator"\n')
        return {"oslo_policy": {"policy_file": path}}


class CORSFixture(APIFixture):
    def overrides(self, workdir: str) -> dict[str, dict[str, Any]]:
        return {"cors": {"allowed_origin": ["http://valid.example.com"]}}


class BehindProxyFixture(APIFixture):
    def overrides(self, workdir: str) -> dict[str, dict[str, Any]]:
        return {"oslo_middleware": {"enable_proxy_headers_parsing": True}}


class SmallBodyLimitFixture(APIFixture):
    def overrides(self, workdir: str) -> dict[str, dict[str, Any]]:
        return {"oslo_middleware": {"max_request_body_size": 128}}


class RandomizedCandidatesFixture(APIFixture):
    def overrides(self, workdir: str) -> dict[str, dict[str, Any]]:
        return {"placement": {"randomize_allocation_candidates": True}}


class CappedCandidatesFixture(APIFixture):
    def overrides(self, workdir: str) -> dict[str, dict[str, Any]]:
        return {"placement": {"max_allocation_candidates": 2}}


class BreadthFirstCandidatesFixture(APIFixture):
    def overrides(self, workdir: str) -> dict[str, dict[str, Any]]:
        return {"placement": {
            "max_allocation_candidates": 2,
            "allocation_candidates_generation_strategy": "breadth-first"}}


class MetricsFixture(APIFixture):
    """``[metrics] enabled``, with two configured flavors (one of them
    with a required trait) and no caching of the capacity figures, so each
    request sees the writes before it."""

    def overrides(self, workdir: str) -> dict[str, dict[str, Any]]:
        return {"metrics": {
            "enabled": True, "capacity_interval": 0,
            "capacity_requests": ["small:resources=VCPU:1,MEMORY_MB:512",
                                  "fast:resources=VCPU:2&required=HW_CPU_X86_AVX2"]}}


class MetricsOpenFixture(MetricsFixture):
    """As MetricsFixture, with the metrics rule open to anyone (``"@"``):
    scrapes without a token."""

    def overrides(self, workdir: str) -> dict[str, dict[str, Any]]:
        path = _policy_file(workdir, "policy.yaml", '"placement:metrics": "@"\n')
        return {**super().overrides(workdir),
                "oslo_policy": {"policy_file": path}}


_FIXTURES = (APIFixture, LegacyPolicyFixture, OpenPolicyFixture,
             ClosedPolicyFixture, OperatorRolePolicyFixture, CORSFixture,
             BehindProxyFixture, SmallBodyLimitFixture,
             RandomizedCandidatesFixture,
             CappedCandidatesFixture, BreadthFirstCandidatesFixture,
             BaremetalFixture, MetricsFixture, MetricsOpenFixture)


def module_for(backend: str) -> types.ModuleType:
    """A fixture module whose classes create their databases on ``backend``."""
    module = types.ModuleType("placement_fixtures_" + backend)
    for base in _FIXTURES:
        setattr(module, base.__name__,
                type(base.__name__, (base,), {"BACKEND": backend}))
    return module
