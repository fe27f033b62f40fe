"""``placement-status upgrade check``: is this deployment ready to upgrade?"""

from __future__ import annotations

import sys

from oslo_config import cfg
from oslo_upgradecheck import common_checks, upgradecheck

from placement import conf as placement_conf
from placement.db import migration
from placement.db.api import Database, redact_url


class Checks(upgradecheck.UpgradeCommands):
    def __init__(self, conf):  # type: ignore[no-untyped-def]
        self.conf = conf

    def _check_schema(self) -> upgradecheck.Result:
        db = Database(self.conf)
        try:
            current = migration.current_revision(db)
        except Exception as exc:
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE,
                "Cannot reach database %s: %s" % (redact_url(db.url), exc))
        head = migration.head_revision()
        if current != head:
            return upgradecheck.Result(
                upgradecheck.Code.FAILURE,
                "Schema revision %s is not the latest (%s); run "
                "'placement-manage db sync'." % (current, head))
        return upgradecheck.Result(upgradecheck.Code.SUCCESS)

    _upgrade_checks = (
        ("Database schema", _check_schema),
        ("Policy File JSON to YAML Migration",
         (common_checks.check_policy_json, {"conf": None})),
    )


def main(argv: list[str] | None = None) -> int:
    # upgradecheck.main registers its sub-commands and parses the command
    # line itself, so it gets a registered but unparsed configuration.
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    checks = Checks(conf)
    # check_policy_json reads the conf it is given.
    checks._upgrade_checks = (  # noqa: SLF001
        checks._upgrade_checks[0],
        ("Policy File JSON to YAML Migration",
         (common_checks.check_policy_json, {"conf": conf})),
    )
    return upgradecheck.main(
        conf, project="placement", upgrade_command=checks,
        argv=argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
