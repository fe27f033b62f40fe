"""``placement-manage``: database administration.

* ``db sync``: create or upgrade the schema and sync standard classes and
  traits; safe to repeat.  A database of OpenStack Placement's is adopted
  in place (see placement/db/adoption.py); one it must not touch is
  refused with the reason, unchanged.
* ``db version``: the schema revision of the database ("None" when it is
  empty), or what it is when it is not ours yet.
* ``db online_data_migrations``: data migrations that may run while the
  service serves (none are pending in this release; the command exists so
  that upgrade tooling can call it).
"""

from __future__ import annotations

import argparse
import sys

import placement
from placement import conf as placement_conf
from placement.cmd import Refused, database_failures_said
from placement.db import migration
from placement.db.api import Database, redact_url

PROG = "placement-manage"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="placement-manage")
    parser.add_argument("--version", action="version",
                        version=placement.__version__)
    parser.add_argument("--config-file", action="append", default=None)
    parser.add_argument("--config-dir", default=None)
    groups = parser.add_subparsers(dest="group", required=True)
    db = groups.add_parser("db", help="database commands")
    commands = db.add_subparsers(dest="command", required=True)
    commands.add_parser("sync", help="create or upgrade the schema")
    commands.add_parser("version", help="print the schema revision")
    online = commands.add_parser(
        "online_data_migrations", help="run online data migrations")
    online.add_argument("--max-count", type=int, default=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    conf_args: list[str] = []
    for path in args.config_file or []:
        conf_args += ["--config-file", path]
    if args.config_dir:
        conf_args += ["--config-dir", args.config_dir]
    try:
        conf = placement_conf.load(
            conf_args, default_config_files=[] if args.config_file else None,
            prog=PROG)
    except placement_conf.InvalidConfig as exc:
        print("%s: %s" % (PROG, exc), file=sys.stderr)
        return 1
    db = Database(conf)
    try:
        with database_failures_said(PROG, db):
            if args.command == "sync":
                found = migration.upgrade(db)
                if found.kind == "upstream":
                    print("adopted the OpenStack Placement database at "
                          "upstream revision %s" % found.revision)
                print("database %s is at revision %s"
                      % (redact_url(db.url), migration.current_revision(db)))
            elif args.command == "version":
                print(_version_text(db))
            else:
                print("no online data migrations are pending")
    except Refused:
        return 1
    finally:
        db.dispose()
    return 0


def _version_text(db: Database) -> str:
    found = migration.describe(db)
    if found.kind == "upstream":
        return "upstream OpenStack Placement revision %s: %s" % (
            found.revision, migration.adoptability(db))
    if found.kind == "unknown":
        return "unknown: %s" % found.detail
    return str(found.revision)


if __name__ == "__main__":
    sys.exit(main())
