"""Requests sent to the WSGI application in this process, to time them.

Run with the Python of a virtualenv holding the project (it imports
``placement``), against a database some benchmark left loaded::

    benchmarks/.venv-ours/bin/python -m benchmarks.inprocess \\
        --db-url postgresql+psycopg2://bench:bench@127.0.0.1:5432/placement_bench \\
        --churn-queries 1000 --requests 500

Every path is asked a few times first (so that the worker keeps what it
keeps), then the paths in turn: the CPU time of the best of five loops is
printed per request.  Without gunicorn, sockets or other processes in
the figure, what is left is the application's own work (the log line of
each request goes to stderr, as in a worker).  The machine's noise still
moves it, by a third between two runs on some machines: compare versions
by alternating runs, or by counting instructions.

``--count-loop`` runs the loop once, inside ``functools.reduce``, so that
``valgrind --tool=callgrind --collect-atstart=no
--toggle-collect=functools_reduce`` counts the instructions of the
requests alone, without the start-up: the same count to a tenth of a per
cent from run to run, where time is not.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
import timeit
from typing import Any, Callable

HEADERS = {"OpenStack-API-Version": "placement 1.39", "X-Auth-Token": "admin"}


def _request(app: Callable[..., Any], path: str) -> None:
    import webob

    response = webob.Request.blank(path, headers=HEADERS).get_response(app)
    if response.status_int >= 400:
        raise SystemExit("%s answered %s: %s" % (path, response.status, response.text[:300]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db-url", required=True,
                        help="[placement_database] connection of the loaded database")
    parser.add_argument("--path", action="append", default=[],
                        help="a request path (with its query); repeatable")
    parser.add_argument("--churn-queries", type=int, metavar="LIMIT",
                        help="add the churn workload's candidate queries at this limit")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--count-loop", action="store_true",
                        help="one loop inside functools.reduce, for callgrind")
    args = parser.parse_args()
    os.environ["OS_PLACEMENT_DATABASE__CONNECTION"] = args.db_url
    os.environ["OS_API__AUTH_STRATEGY"] = "noauth2"
    paths = list(args.path)
    if args.churn_queries:
        from benchmarks import churn

        paths += [flavor.query(zone, False, args.churn_queries)
                  for flavor in churn.FLAVORS for zone in (None, 0)]
    if not paths:
        parser.error("no paths: give --path or --churn-queries")

    from placement.wsgi import api

    app = api.application
    # The worker reads every tree in a thread of its own as it starts
    # (placement.app.warm): let it finish before anything is counted.
    time.sleep(2)
    for path in paths * 3:
        _request(app, path)

    def one(count: int, index: int) -> int:
        _request(app, paths[index % len(paths)])
        return count + 1

    if args.count_loop:
        functools.reduce(one, range(args.requests), 0)
        return
    best = min(timeit.repeat(lambda: functools.reduce(one, range(args.requests), 0),
                             number=1, repeat=5, timer=time.process_time))
    print("%.3f ms of CPU per request (best of 5 loops of %d over %d paths)"
          % (best / args.requests * 1000, args.requests, len(paths)), file=sys.stderr)


if __name__ == "__main__":
    main()
