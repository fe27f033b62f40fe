"""``placement-api``: a development server.

With no ``[placement_database] connection`` configured it serves from
``placement.sqlite`` in the working directory, creating or upgrading the
schema first.  ``--baremetal-port P`` also serves the bare-metal
allocation API (Ironic's ``/v1/allocations``) on port P of the same host,
from the same database.  For production run ``placement.wsgi.api:application``
(and ``placement.wsgi.baremetal:application``) under gunicorn or uwsgi.
"""

from __future__ import annotations

import argparse
import socketserver
import sys
import threading
from typing import Any
from wsgiref import simple_server

from placement import app, conf as placement_conf
from placement.baremetal import app as baremetal_app
from placement.cmd import Refused, database_failures_said
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


def _listen(host: str, port: int, application: Any) -> simple_server.WSGIServer | None:
    try:
        return simple_server.make_server(
            host, port, application,
            server_class=_ThreadingServer, handler_class=_QuietHandler)
    except OSError as exc:
        print("%s: cannot listen on %s:%d: %s" % (PROG, host, port,
                                                  exc.strerror or exc),
              file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8778)
    parser.add_argument("--baremetal-port", type=int, default=None,
                        help="also serve the bare-metal allocation API on this port")
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
        with database_failures_said(PROG, db):
            if embedded or conf.placement_database.sync_on_startup:
                migration.upgrade(db)
    except Refused:
        return 1
    server = _listen(args.host, args.port, app.build_app(conf, db))
    if server is None:
        return 1
    if args.baremetal_port is not None:
        baremetal = _listen(args.host, args.baremetal_port,
                            baremetal_app.build_app(conf, db))
        if baremetal is None:
            return 1
        threading.Thread(target=baremetal.serve_forever, daemon=True).start()
        print("placement-api: bare-metal allocation API on http://%s:%d/"
              % (args.host, args.baremetal_port))
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
