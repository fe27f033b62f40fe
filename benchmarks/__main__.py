"""Command line: ``python3 -m benchmarks run|report ...`` (see README.rst).

    python3 -m benchmarks run --db postgresql --upstream-venv PATH
    python3 -m benchmarks report [RESULTS.json] [--markdown | --rst] [--full]
    python3 -m benchmarks baremetal --db postgresql [--ironic-venv PATH]
    .venv/bin/python -m benchmarks metrics [--providers 10000] [--db-url URL]

``report`` without a file reads the newest ``benchmarks/results/*.json``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import sys


def _exit_cleanly_on_signals() -> None:
    """SIGTERM / SIGINT unwind through ``finally`` blocks, which stop the
    server under test (a background job may inherit SIGINT as ignored)."""
    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def _report(argv: list[str]) -> int:
    from benchmarks import report
    from benchmarks import sharedbench

    parser = argparse.ArgumentParser(prog="python3 -m benchmarks report")
    parser.add_argument("results", nargs="?",
                        help="JSON written by run (default: newest in "
                        "benchmarks/results)")
    style = parser.add_mutually_exclusive_group()
    style.add_argument("--markdown", action="store_const", dest="style",
                       const="markdown", default="text",
                       help="Markdown tables")
    style.add_argument("--rst", action="store_const", dest="style",
                       const="rst", help="reStructuredText tables (README.rst)")
    parser.add_argument("--full", action="store_true",
                        help="also every figure of every workload")
    args = parser.parse_args(argv)
    path = args.results
    if not path:
        found = glob.glob(os.path.join(sharedbench.REPO_ROOT, "benchmarks",
                                       "results", "*.json"))
        if not found:
            parser.error("no results file given and none in "
                         "benchmarks/results")
        path = max(found, key=os.path.getmtime)
    with open(path) as f:
        doc = json.load(f)
    if args.style == "text":
        print("results: %s" % path)
    sys.stdout.write(report.render(doc, args.style, args.full))
    return 0


def main(argv: list[str]) -> int:
    commands = ("run", "report", "baremetal", "metrics")
    if not argv or argv[0] not in commands:
        print(__doc__.strip(), file=sys.stderr)
        print("\ncommands: %s; add --help to either" % ", ".join(commands),
              file=sys.stderr)
        return 2
    if argv[0] == "report":
        return _report(argv[1:])
    if argv[0] == "metrics":
        # In this process, with this repository's virtualenv: no kit.
        from benchmarks import metrics
        return metrics.main(argv[1:])
    # The shared kit must be on sys.path before the runner imports it.
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--shared-bench")
    known, _ = pre.parse_known_args(argv[1:])
    from benchmarks import sharedbench
    sharedbench.activate(known.shared_bench)
    _exit_cleanly_on_signals()
    if argv[0] == "baremetal":
        from benchmarks import baremetal
        return baremetal.main(argv[1:])
    from benchmarks import runner
    return runner.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
