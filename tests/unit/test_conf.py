"""Configuration: option names, files, environment variables, bad values."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from placement import conf as placement_conf
from placement.conf import opts


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # Options set in the developer's or CI's environment must not leak in.
    import os

    for name in list(os.environ):
        if name.startswith("OS_"):
            monkeypatch.delenv(name)


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "placement.conf"
    path.write_text(text)
    return str(path)


def test_defaults() -> None:
    conf = placement_conf.load([], default_config_files=[])
    assert conf.api.auth_strategy == "keystone"
    assert conf.placement_database.connection is None
    assert conf.placement_database.sync_on_startup is False
    assert conf.placement.randomize_allocation_candidates is False
    assert conf.placement.incomplete_consumer_project_id == (
        "00000000-0000-0000-0000-000000000000")
    assert conf.placement.incomplete_consumer_user_id == (
        "00000000-0000-0000-0000-000000000000")
    assert conf.placement.allocation_conflict_retry_count == 10
    assert conf.placement.max_allocation_candidates == -1
    assert conf.placement.allocation_candidates_generation_strategy == "depth-first"


def test_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OS_PLACEMENT_DATABASE__CONNECTION", "sqlite:////tmp/env.sqlite")
    monkeypatch.setenv("OS_API__AUTH_STRATEGY", "noauth2")
    monkeypatch.setenv("OS_PLACEMENT__MAX_ALLOCATION_CANDIDATES", "25")
    monkeypatch.setenv("OS_PLACEMENT__RANDOMIZE_ALLOCATION_CANDIDATES", "true")
    monkeypatch.setenv("OS_PLACEMENT_DATABASE__MAX_POOL_SIZE", "7")
    conf = placement_conf.load([], default_config_files=[])
    assert conf.placement_database.connection == "sqlite:////tmp/env.sqlite"
    assert conf.api.auth_strategy == "noauth2"
    assert conf.placement.max_allocation_candidates == 25
    assert conf.placement.randomize_allocation_candidates is True
    assert conf.placement_database.max_pool_size == 7


def test_config_file(tmp_path: Path) -> None:
    path = _write(tmp_path, """
[api]
auth_strategy = noauth2
[placement_database]
connection = mysql+pymysql://placement:secret@db/placement
sync_on_startup = true
max_overflow = 3
connection_recycle_time = 600
[placement]
allocation_candidates_generation_strategy = breadth-first
incomplete_consumer_project_id = 11111111-1111-1111-1111-111111111111
""")
    conf = placement_conf.load(["--config-file", path])
    assert conf.api.auth_strategy == "noauth2"
    assert conf.placement_database.connection == (
        "mysql+pymysql://placement:secret@db/placement")
    assert conf.placement_database.sync_on_startup is True
    assert conf.placement_database.max_overflow == 3
    assert conf.placement_database.connection_recycle_time == 600
    assert conf.placement.allocation_candidates_generation_strategy == "breadth-first"
    assert conf.placement.incomplete_consumer_project_id == (
        "11111111-1111-1111-1111-111111111111")


def test_default_config_files_are_read(tmp_path: Path) -> None:
    path = _write(tmp_path, "[api]\nauth_strategy = noauth2\n")
    conf = placement_conf.load([], default_config_files=[path])
    assert conf.api.auth_strategy == "noauth2"


def test_environment_beats_the_config_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, "[placement]\nmax_allocation_candidates = 5\n")
    monkeypatch.setenv("OS_PLACEMENT__MAX_ALLOCATION_CANDIDATES", "9")
    conf = placement_conf.load(["--config-file", path])
    assert conf.placement.max_allocation_candidates == 9


def test_bad_value_from_the_environment_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OS_API__AUTH_STRATEGY", "bogus")
    with pytest.raises(placement_conf.InvalidConfig) as info:
        placement_conf.load([], default_config_files=[])
    message = str(info.value)
    assert "[api] auth_strategy" in message
    assert "OS_API__AUTH_STRATEGY" in message
    assert "bogus" in message
    assert "LocationInfo" not in message


def test_bad_values_from_a_file_are_all_listed(tmp_path: Path) -> None:
    path = _write(tmp_path, """
[placement]
max_allocation_candidates = many
allocation_candidates_generation_strategy = sideways
[placement_database]
max_pool_size = -x
""")
    with pytest.raises(placement_conf.InvalidConfig) as info:
        placement_conf.load(["--config-file", path])
    message = str(info.value)
    assert "[placement] max_allocation_candidates (from %s)" % path in message
    assert "[placement] allocation_candidates_generation_strategy" in message
    assert "sideways" in message
    assert "[placement_database] max_pool_size" in message


def test_an_option_below_its_minimum_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OS_PLACEMENT__ALLOCATION_CONFLICT_RETRY_COUNT", "-1")
    with pytest.raises(placement_conf.InvalidConfig, match="allocation_conflict_retry_count"):
        placement_conf.load([], default_config_files=[])


def test_env_var_name() -> None:
    assert placement_conf.env_var("placement_database", "connection") == (
        "OS_PLACEMENT_DATABASE__CONNECTION")
    assert placement_conf.env_var(None, "debug") == "OS_DEFAULT__DEBUG"


def test_the_connection_is_secret() -> None:
    # Secret options are masked when oslo.config logs its options.
    conf = placement_conf.load([], default_config_files=[])
    opt = conf._get_opt_info("connection", "placement_database")["opt"]
    assert opt.secret


def test_other_libraries_groups_are_registered() -> None:
    conf = placement_conf.load([], default_config_files=[])
    assert conf.oslo_policy.policy_file == "policy.yaml"
    assert conf.keystone_authtoken.www_authenticate_uri is None


def test_generator_lists_upstreams_names() -> None:
    listed = {group: {opt.dest for opt in group_opts}
              for group, group_opts in opts.list_opts()}
    assert {"state_path", "pybasedir", "tempdir", "log_options"} <= listed[None]
    assert {"auth_strategy"} <= listed["api"]
    assert {"connection", "sync_on_startup", "max_pool_size", "max_overflow",
            "connection_recycle_time", "pool_timeout", "max_retries",
            "retry_interval", "mysql_sql_mode", "connection_parameters",
            } <= listed["placement_database"]
    assert {"randomize_allocation_candidates", "incomplete_consumer_project_id",
            "incomplete_consumer_user_id", "allocation_conflict_retry_count",
            "max_allocation_candidates", "allocation_candidates_generation_strategy",
            } <= listed["placement"]


def test_cors_lets_browsers_use_microversions() -> None:
    defaults = placement_conf.cors_defaults()
    assert "OpenStack-API-Version" in defaults["allow_headers"]
    assert "OpenStack-API-Version" in defaults["expose_headers"]
    assert "X-Openstack-Request-Id" in defaults["expose_headers"]


def test_sample_config_lists_every_placement_option() -> None:
    # etc/placement/placement.conf.sample is generated (tox -e genconfig);
    # an option added without regenerating it fails here.
    sample = (Path(__file__).parents[2] / "etc" / "placement"
              / "placement.conf.sample").read_text()
    sections: dict[str, str] = {}
    current = None
    for line in sample.splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    for group, group_opts in opts.list_opts():
        text = sections[group or "DEFAULT"]
        for opt in group_opts:
            assert re.search(r"^#%s =" % opt.dest, text, re.M), (group, opt.dest)
    for group in ("keystone_authtoken", "cors", "oslo_policy", "oslo_middleware"):
        assert group in sections


def test_noauth2_workers_do_without_keystonemiddleware(tmp_path: Path) -> None:
    # keystonemiddleware and alembic cost each worker tens of megabytes;
    # a fresh interpreter shows whether building a noauth2 application
    # without start-up migration still imports them.
    script = (
        "import sys\n"
        "from placement import app, conf\n"
        "c = conf.load([], default_config_files=[])\n"
        "assert 'keystone_authtoken' not in c, 'keystone options registered'\n"
        "app.build_app(c)\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.split('.')[0] in ('keystonemiddleware', 'alembic')))\n")
    env = dict(os.environ, OS_API__AUTH_STRATEGY="noauth2",
               OS_PLACEMENT_DATABASE__CONNECTION="sqlite:///%s" % (tmp_path / "db"))
    done = subprocess.run([sys.executable, "-c", script], env=env,
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
