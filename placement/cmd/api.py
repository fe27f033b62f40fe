"""``placement-api``: a development server.

With no ``[placement_database] connection`` configured it serves from
``placement.sqlite`` in the working directory, creating or upgrading the
schema first.  For production run ``placement.wsgi.api:application`` under
gunicorn or uwsgi.
"""

from __future__ import annotations

import argparse
import sys
from wsgiref import simple_server

from oslo_log import log as logging

from placement import app, conf as placement_conf
from placement.db import migration
from placement.db.api import Database, redact_url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="placement-api")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8778)
    args, rest = parser.parse_known_args(argv)
    conf = placement_conf.load(rest, prog="placement-api")
    logging.setup(conf, "placement")
    db = Database(conf)
    embedded = not conf.placement_database.connection
    try:
        if embedded or conf.placement_database.sync_on_startup:
            migration.upgrade(db)
    except Exception as exc:  # the message is for a person at a terminal
        print("placement-api: cannot use database %s: %s"
              % (redact_url(db.url), exc), file=sys.stderr)
        return 1
    application = app.build_app(conf, db)
    server = simple_server.make_server(args.host, args.port, application)
    print("placement-api: database %s" % redact_url(db.url))
    print("placement-api: serving on http://%s:%d/ (auth_strategy=%s)"
          % (args.host, args.port, conf.api.auth_strategy))
    if conf.api.auth_strategy == "noauth2":
        print("placement-api: try: curl -H 'X-Auth-Token: admin' "
              "http://%s:%d/resource_providers" % (args.host, args.port))
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
