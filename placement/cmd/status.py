"""``placement-status upgrade check``: is this deployment ready to upgrade?

Exit codes are oslo.upgradecheck's: 0 success, 1 warning, 2 failure, 255
when a check itself crashed.
"""

from __future__ import annotations

import sys

from oslo_config import cfg
from oslo_upgradecheck import common_checks, upgradecheck

from placement import conf as placement_conf
from placement.db import migration
from placement.db.api import Database


class Checks(upgradecheck.UpgradeCommands):
    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        # Instance-level: check_policy_json reads the conf it is given.
        self._upgrade_checks = (
            ("Configuration", Checks._check_config),
            ("Database schema", Checks._check_schema),
            ("Policy File JSON to YAML Migration",
             (common_checks.check_policy_json, {"conf": conf})),
        )

    def _check_config(self) -> upgradecheck.Result:
        try:
            placement_conf.check(self.conf)
        except placement_conf.InvalidConfig as exc:
            return upgradecheck.Result(upgradecheck.Code.FAILURE, str(exc))
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)

    def _check_schema(self) -> upgradecheck.Result:
        try:
            db = Database(self.conf)
        except (ValueError, cfg.Error):
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE,
                "Not checked: the database options are invalid.")
        try:
            found = migration.describe(db)
            if found.kind == "upstream":
                return upgradecheck.Result(
                    upgradecheck.Code.FAILURE,
                    "The database holds OpenStack Placement's schema at "
                    "upstream revision %s, not adopted yet; %s."
                    % (found.revision, migration.adoptability(db)))
        except Exception as exc:
            message = db.explain(exc)
            if message is None:
                raise
            return upgradecheck.Result(upgradecheck.Code.FAILURE, message)
        finally:
            db.dispose()
        if found.kind == "unknown":
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE, "Not ours to upgrade: %s." % found.detail)
        head = migration.head_revision()
        if found.revision != head:
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE,
                "Schema revision %s is not the latest (%s); run "
                "'placement-manage db sync'." % (found.revision, head))
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)


def main(argv: list[str] | None = None) -> int:
    # upgradecheck.main registers its sub-commands and parses the command
    # line itself, so it gets a registered but unparsed configuration.
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    return upgradecheck.main(
        conf, project="placement", upgrade_command=Checks(conf),
        argv=argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
