"""``placement-api``: a development server.

With no ``[placement_database] connection`` configured it serves from
``placement.sqlite`` in the working directory, creating or upgrading the
schema first.  For production run ``placement.wsgi.api:application`` under
gunicorn or uwsgi.
"""

from __future__ import annotations

import argparse
import socketserver
import sys
from wsgiref import simple_server

from placement import app, conf as placement_conf
from placement.db import migration
from placement.db.api import Database, redact_url

PROG = "placement-api"


class _ThreadingServer(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    """One thread per request, so a slow client does not stall the others."""

    daemon_threads = True


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        # placement.requestlog already logs every request, with its id.
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8778)
    args, rest = parser.parse_known_args(argv)
    try:
        conf = placement_conf.load(rest, prog=PROG)
    except placement_conf.InvalidConfig as exc:
        print("%s: %s" % (PROG, exc), file=sys.stderr)
        return 1
    placement_conf.setup_logging(conf)
    db = Database(conf)
    embedded = not conf.placement_database.connection
    try:
        if embedded or conf.placement_database.sync_on_startup:
            migration.upgrade(db)
    except migration.SchemaRefused as exc:
        print("%s: %s" % (PROG, exc), file=sys.stderr)
        return 1
    except Exception as exc:
        message = db.explain(exc)
        if message is None:
            raise
        print("%s: %s" % (PROG, message), file=sys.stderr)
        return 1
    application = app.build_app(conf, db)
    try:
        server = simple_server.make_server(
            args.host, args.port, application,
            server_class=_ThreadingServer, handler_class=_QuietHandler)
    except OSError as exc:
        print("%s: cannot listen on %s:%d: %s" % (PROG, args.host, args.port,
                                                  exc.strerror or exc),
              file=sys.stderr)
        return 1
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
