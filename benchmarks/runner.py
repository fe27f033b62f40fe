"""``python3 -m benchmarks run``: options, venvs and the alternating loop.

Every scenario runs once per side and round; the side order alternates
between rounds (upstream, ours, then ours, upstream ...) so slow drift of a
shared machine does not favour one side.  The results file is rewritten
after every scenario, so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from benchmarks import churn
from benchmarks import report
from benchmarks import sharedbench
from benchmarks import venvs
from benchmarks import workloads

from benchlib import config  # noqa: E402  (importable after sharedbench)

RESULTS_DIR = os.path.join(sharedbench.REPO_ROOT, "benchmarks", "results")

# --quick: small sizes for trying the harness or a change in minutes.
QUICK = {"providers": 200, "trees": 100, "large_providers": 1000,
         "write_providers": 10, "reshape_consumers": 200,
         "allocation_samples": 20, "reshape_samples": 4, "wide_hosts": 20,
         "wide_hosts_unlimited": 5,
         "latency_samples": 10, "requests": 100, "throughput_time_limit": 30,
         "hosts": 100, "churn_seconds": 20}

T0 = time.monotonic()


def log(message: str) -> None:
    print("[%6.0fs] %s" % (time.monotonic() - T0, message), flush=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("what to compare")
    g.add_argument("--ours-venv", metavar="PATH",
                   help="venv with this repository installed (default "
                   "benchmarks/.venv-ours, created on first use)")
    g.add_argument("--upstream-venv", metavar="PATH",
                   help="venv with upstream openstack-placement, gunicorn, "
                   "psycopg2-binary and pymysql; measured in the same run")
    g.add_argument("--install-upstream", action="store_true",
                   help="create the upstream venv (at --upstream-venv or "
                   "benchmarks/.venv-upstream) if it is missing")
    g.add_argument("--upstream-version", default=venvs.UPSTREAM_VERSION,
                   help="openstack-placement release for --install-upstream "
                   "(default %(default)s)")
    g.add_argument("--sides", help="comma separated subset of upstream,ours "
                   "(default: both when an upstream venv is given)")
    g.add_argument("--rounds", type=int, default=1,
                   help="repetitions, alternating the side order (default 1)")
    g.add_argument("--shared-bench", metavar="DIR",
                   help="the shared kit (default ../shared/bench)")
    g.add_argument("--quick", action="store_true",
                   help="small sizes (%s) unless given explicitly" %
                   ", ".join("%s=%s" % kv for kv in QUICK.items()))

    g = parser.add_argument_group("workloads of this package")
    g.add_argument("--large-providers", type=int, default=10000,
                   help="flat-large: providers (default 10000)")
    g.add_argument("--reshape-consumers", type=int, default=1000,
                   help="reshape: consumers on the node (default 1000)")
    g.add_argument("--reshape-batch", type=int, default=100,
                   help="reshape: consumers per POST /allocations while "
                   "loading (default 100)")
    g.add_argument("--allocation-samples", type=int, default=50,
                   help="reshape: sequential PUT /allocations (default 50)")
    g.add_argument("--reshape-samples", type=int, default=10,
                   help="reshape: sequential POST /reshaper (default 10)")
    g.add_argument("--wide-hosts", type=int, default=200,
                   help="wide: hosts of 8 GPUs each (default 200)")
    g.add_argument("--wide-hosts-unlimited", type=int, default=20,
                   help="wide: hosts for the variant without limit, whose "
                   "answer grows by 3,360 candidates per host (default 20)")
    g.add_argument("--wide-timeout", type=float, default=300,
                   help="wide: query timeout in seconds (default 300)")
    g.add_argument("--hosts", type=int, default=500,
                   help="churn: compute hosts of the cloud (default 500)")
    g.add_argument("--churn-seconds", type=float, default=60,
                   help="churn: how long the schedulers run per limit "
                   "(default 60)")
    g.add_argument("--churn-limits", default="50,1000",
                   type=lambda text: [int(x) for x in text.split(",")],
                   help="churn: the limit of each phase, one after the other "
                   "on the same cloud (default 50,1000)")
    g.add_argument("--churn-schedulers", type=int, default=8,
                   help="churn: concurrent schedulers (default 8)")
    g.add_argument("--churn-fill", type=float, default=0.6,
                   help="churn: share of the memory used by instances "
                   "placed before the clock starts (default 0.6)")
    g.add_argument("--heartbeat-interval", type=float, default=60,
                   help="churn: seconds between two heartbeats of a host "
                   "(default 60)")
    g.add_argument("--churn-seed", type=int, default=1,
                   help="churn: seed of the cloud and of the schedulers")
    g.add_argument("--cold-workers", type=int, default=5,
                   help="flat, nested: fresh workers whose first answer is "
                   "timed, besides the kit's first request (default 5; 0 "
                   "skips them)")
    g.add_argument("--wide-limit-only", dest="wide_no_limit",
                   action="store_false",
                   help="wide: skip the variant without limit")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python3 -m benchmarks run",
        description="Benchmark this Placement (and upstream, alternating) "
        "with real gunicorn servers; see benchmarks/README.rst.")
    add_arguments(parser)
    config.add_common_arguments(parser)
    parser.set_defaults(scenario=",".join(workloads.SCENARIOS))
    args = parser.parse_args(argv)
    if args.quick:
        parser.set_defaults(**QUICK)
        args = parser.parse_args(argv)
    args.scenarios = [s.strip() for s in args.scenario.split(",") if s.strip()]
    for name in args.scenarios:
        if name not in workloads.SCENARIOS and not churn.is_churn(name):
            parser.error("unknown scenario %r (choose from %s, or churn-N "
                         "for one phase of limit N)"
                         % (name, ", ".join(workloads.SCENARIOS)))
    args.server_env = config.parse_env(args.server_env)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    if not args.workdir:
        args.workdir = os.path.join("/tmp/placement-bench", stamp)
    os.makedirs(args.workdir, exist_ok=True)
    if not args.json:
        os.makedirs(RESULTS_DIR, exist_ok=True)
        args.json = os.path.join(RESULTS_DIR, "local-%s-%s.json"
                                 % (stamp, args.db))
    return args


def choose_sides(args: argparse.Namespace) -> list[tuple[str, str]]:
    """[(label, venv)] in the order of the first round."""
    wanted = ([s.strip() for s in args.sides.split(",")] if args.sides
              else ["upstream", "ours"])
    unknown = set(wanted) - {"upstream", "ours"}
    if unknown:
        raise SystemExit("--sides: unknown %s" % ", ".join(sorted(unknown)))
    sides = []
    if "upstream" in wanted:
        upstream = venvs.ensure_upstream(args.upstream_venv,
                                         args.install_upstream,
                                         args.upstream_version, log)
        if upstream:
            sides.append(("upstream", upstream))
        elif args.sides:
            raise SystemExit("--sides upstream needs --upstream-venv or "
                             "--install-upstream")
    if "ours" in wanted:
        sides.append(("ours", venvs.ensure_ours(args.ours_venv, log)))
    return sides


def options_record(args: argparse.Namespace) -> dict[str, Any]:
    record = config.options_record(args)
    for key in ("rounds", "large_providers", "reshape_consumers",
                "reshape_batch", "allocation_samples", "reshape_samples",
                "wide_hosts", "wide_hosts_unlimited", "wide_timeout",
                "wide_no_limit", "hosts", "churn_seconds", "churn_limits",
                "churn_schedulers", "churn_fill", "heartbeat_interval",
                "churn_seed", "quick"):
        record[key] = getattr(args, key)
    return record


def main(argv: list[str]) -> int:
    args = parse(argv)
    workloads.register()
    churn.register(args.scenarios)
    sides = choose_sides(args)
    doc: dict[str, Any] = {
        "machine": config.machine(), "options": options_record(args),
        "sides": [], "runs": {label: {s: [] for s in args.scenarios}
                              for label, _ in sides}}
    cfgs = {}
    for label, venv in sides:
        cfgs[label] = config.for_venv(args, venv, label)
        location = venvs.placement_location(venv)
        info = {"label": label, "venv": venv,
                "placement_version": config.package_version(venv),
                "placement_path": location,
                "gunicorn_version": venvs.gunicorn_version(venv),
                "revision": venvs.source_revision(location)
                if label == "ours" else None}
        doc["sides"].append(info)
        log("%s = %s (placement from %s, openstack-placement %s, gunicorn %s)"
            % (label, venv, info["placement_path"],
               info["placement_version"] or "n/a", info["gunicorn_version"]))
    log("db %s, %d worker(s), scenarios %s, %d round(s); logs in %s; "
        "results in %s" % (args.db, args.workers, ",".join(args.scenarios),
                           args.rounds, args.workdir, args.json))

    for rnd in range(args.rounds):
        order = sides if rnd % 2 == 0 else sides[::-1]
        for scenario in args.scenarios:
            for label, _ in order:
                log("---- round %d/%d, %s, %s" % (rnd + 1, args.rounds,
                                                  scenario, label))
                cfg = cfgs[label]
                cfg.scenarios = [scenario]
                result = workloads.run(cfg, scenario, log)
                doc["runs"][label][scenario].append(result)
                with open(args.json, "w") as f:
                    json.dump(doc, f, indent=2)

    print()
    report.print_text(doc, full=True)
    print("\nresults written to %s" % args.json)
    bad = any(r.get("problems") for per in doc["runs"].values()
              for runs in per.values() for r in runs)
    return 1 if bad else 0
