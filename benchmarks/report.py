"""``python3 -m benchmarks report``: the figures and targets of a results file.

Reads the JSON written by ``run`` (standard library only, no kit needed)
and prints two tables: the key figures per workload with upstream, ours and
the gain (how many times better ours is: upstream/ours for times and
memory, ours/upstream for rates; below 1 means worse), and the project's
targets with PASS / FAIL.  With several rounds each figure is the median
over rounds.  ``--markdown`` and ``--rst`` write the same tables for
documents (README.rst's Performance section uses ``--rst``).
"""

from __future__ import annotations

import re
import statistics
from typing import Any, Callable, Optional

Result = dict[str, Any]
Getter = Callable[[Result], Any]

LOWER, HIGHER, EQUAL, INFO = "lower", "higher", "equal", "info"


def dig(d: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def path(*keys: str) -> Getter:
    return lambda r: dig(r, *keys)


def peak(*keys: str) -> Getter:
    """Largest per-worker peak RSS (VmHWM) in MB under ``keys``."""
    def get(r: Result) -> Optional[float]:
        values = dig(r, *keys)
        return max(values) if values else None
    return get


def idle_rss(r: Result) -> Optional[float]:
    values = dig(r, "idle_memory", "workers_rss_mb")
    return max(values) if values else None


def cold_first(*prefix: str) -> Getter:
    """A fresh worker's first answer: the median over the fresh workers a
    run timed (``cold``), else the kit's single first request."""
    def get(r: Result) -> Optional[float]:
        median = dig(r, "cold", "median_ms")
        return median if median is not None else dig(r, *prefix,
                                                     "first_request_ms")
    return get


def read_rows(title: str, scenario: str, *prefix: str,
              count: str = "candidates") -> list[tuple]:
    """Rows of one measured GET (kit's measure_query / our measure_get)."""
    return [
        # A worker answers its first request cold: nothing kept yet.
        (title, "first request ms", scenario, path(*prefix, "first_request_ms"),
         LOWER),
        (title, "fresh workers' first answer ms (median)", scenario,
         path("cold", "median_ms"), LOWER),
        (title, "median latency ms", scenario, path(*prefix, "latency",
                                                    "median_ms"), LOWER),
        (title, "p95 latency ms", scenario, path(*prefix, "latency",
                                                 "p95_ms"), LOWER),
        (title, "throughput req/s (c=10)", scenario,
         path(*prefix, "throughput", "requests_per_s"), HIGHER),
        (title, "server CPU ms/req", scenario,
         path(*prefix, "throughput", "server_cpu_ms_per_req"), LOWER),
        (title, count, scenario, path(*prefix, "response", count), EQUAL),
        (title, "response digest", scenario, path(*prefix, "response",
                                                  "digest"), EQUAL),
    ]


def _count(n: Any) -> str:
    return "{:,}".format(n) if isinstance(n, int) else "?"


CHURN_KINDS = ("GET /allocation_candidates", "PUT /allocations",
               "DELETE /allocations", "POST /allocations (move)",
               "GET /allocations", "GET /resource_providers?in_tree",
               "GET inventories", "PUT inventories")


def churn_phases(doc: Result) -> list[tuple[str, int]]:
    """(scenario, limit) of every churn phase a results file holds."""
    found: set[tuple[str, int]] = set()
    for per in (doc.get("runs") or {}).values():
        for scenario, runs in per.items():
            if scenario == "churn" or scenario.startswith("churn-"):
                for r in runs:
                    found.update((scenario, p["limit"])
                                 for p in r.get("phases") or [])
    return sorted(found, key=lambda sl: (sl[1], sl[0]))


def phase(limit: int, *keys: str) -> Getter:
    """A figure of the churn phase with this limit."""
    def get(r: Result) -> Any:
        for p in r.get("phases") or []:
            if p.get("limit") == limit:
                return dig(p, *keys)
        return None
    return get


def candidates_ok(limit: int) -> Getter:
    def get(r: Result) -> Optional[bool]:
        checks = phase(limit, "audit", "candidate_checks")(r)
        return None if checks is None else all(c.get("ok") for c in checks)
    return get


def per_scheduled(limit: int, seconds_key: str) -> Getter:
    """CPU seconds of the churn phase with this limit per scheduled
    instance, in ms."""
    def get(r: Result) -> Optional[float]:
        spent = phase(limit, "churn", seconds_key)(r)
        scheduled = phase(limit, "churn", "scheduled")(r)
        if spent is None or not scheduled:
            return None
        return round(spent * 1000.0 / scheduled, 2)
    return get


def churn_title(options: Result, limit: int) -> str:
    return "7 churn %s hosts, limit=%d" % (_count(options.get("hosts")), limit)


def churn_rows(doc: Result) -> list[tuple]:
    options = doc.get("options", {})
    rows: list[tuple] = []
    for scenario, limit in churn_phases(doc):
        title = churn_title(options, limit)

        def f(*keys: str, limit: int = limit) -> Getter:
            return phase(limit, "churn", *keys)
        rows += [
            (title, "scheduled instances/s", scenario, f("scheduled_per_s"),
             HIGHER),
            (title, "server CPU ms/scheduled", scenario,
             f("server_cpu_ms_per_scheduled"), LOWER),
            (title, "db CPU ms/scheduled", scenario,
             f("db_cpu_ms_per_scheduled"), LOWER),
            # The schedulers run on the same cores: where they take a
            # large share, a server CPU cut buys less than its size in rate.
            (title, "schedulers' CPU ms/scheduled", scenario,
             per_scheduled(limit, "client_cpu_s"), INFO),
            (title, "server CPU ms/req", scenario, f("server_cpu_ms_per_req"),
             LOWER),
            (title, "requests/s", scenario, f("requests_per_s"), HIGHER),
            (title, "boots", scenario, f("boots"), INFO),
            (title, "migrations", scenario, f("migrations"), INFO),
            (title, "claim 409s", scenario, f("claim_409"), INFO),
            (title, "load average before / after", scenario,
             lambda r, f=f: "%s / %s" % (f("loadavg_before")(r),
                                         f("loadavg_after")(r))
             if f("loadavg_before")(r) is not None else None, INFO),
        ]
        for kind in CHURN_KINDS:
            for q in ("p50_ms", "p99_ms"):
                rows.append((title, "%s %s" % (kind, q[:3]), scenario,
                             f("latency", kind, q), LOWER))
        rows += [
            (title, "audit: overcommitted", scenario,
             phase(limit, "audit", "overcommitted"), LOWER),
            (title, "audit: usage mismatches", scenario,
             phase(limit, "audit", "usage_mismatches"), LOWER),
            (title, "audit: 2xx claims missing", scenario,
             phase(limit, "audit", "claims_missing"), LOWER),
            (title, "audit: phantom allocations", scenario,
             phase(limit, "audit", "phantom_allocations"), LOWER),
            (title, "audit: final candidate sets = what fits", scenario,
             candidates_ok(limit), EQUAL),
        ]
    for scenario in sorted({s for s, _ in churn_phases(doc)}):
        rows.append(("7 churn %s hosts" % _count(options.get("hosts")),
                     "worker peak RSS MB", scenario,
                     peak("memory", "workers_peak_rss_mb"), LOWER))
    return rows


def metric_rows(options: Result) -> list[tuple]:
    """(workload, metric, scenario, getter, better) for every figure shown;
    workload titles carry the sizes the run used."""
    flat = "1 flat %s" % _count(options.get("providers"))
    large = _count(options.get("large_providers"))
    nested = "2 nested %s trees" % _count(options.get("trees"))
    claims = "3 claims %s providers" % _count(options.get("write_providers"))
    wide = "4 wide %s hosts" % _count(options.get("wide_hosts"))
    unlimited = "4 wide %s hosts" % _count(options.get("wide_hosts_unlimited"))
    reshape = "6 reshape %s consumers" % _count(
        options.get("reshape_consumers"))
    memory = ("worker peak RSS MB", peak("memory", "workers_peak_rss_mb"),
              LOWER)
    return (
        read_rows(flat, "flat") + [(flat, *memory[:1], "flat", *memory[1:])]
        + read_rows("1 flat %s" % large, "flat-large", "candidates")
        + read_rows("5 GET /resource_providers %s" % large, "flat-large",
                    "providers_query", count="providers")
        + [("1+5 flat %s" % large, memory[0], "flat-large", *memory[1:])]
        + read_rows(nested, "nested")
        + [(nested, memory[0], "nested", *memory[1:])]
        + [
            (claims, "claims/s", "write", path("claims", "claims_per_s"),
             HIGHER),
            (claims, "PUT median ms", "write",
             path("claims", "put_median_ms"), LOWER),
            (claims, "server CPU ms/claim", "write",
             path("claims", "server_cpu_ms_per_claim"), LOWER),
            (claims, "claims made", "write", path("claims", "claims"), INFO),
            (claims, "claimable", "write",
             path("verify", "capacity_in_claims"), EQUAL),
            (claims, "overcommitted pairs", "write",
             path("verify", "overcommitted"), LOWER),
            (claims, "usage mismatches", "write",
             path("verify", "usage_mismatches"), LOWER),
            (claims, memory[0], "write", *memory[1:]),
            (wide, "limit=10 query ms", "wide", path("limited", "query_ms"),
             LOWER),
            (wide, "limit=10 worker peak RSS MB", "wide",
             peak("limited", "worker_peak_rss_mb"), LOWER),
            (unlimited, "no limit query ms", "wide",
             path("unlimited", "query_ms"), LOWER),
            (unlimited, "no limit candidates", "wide",
             path("unlimited", "candidates"), EQUAL),
            (unlimited, "no limit worker peak RSS MB", "wide",
             peak("unlimited", "worker_peak_rss_mb"), LOWER),
            (reshape, "PUT /allocations median ms", "reshape",
             path("put_allocations", "median_ms"), LOWER),
            (reshape, "PUT /allocations p95 ms", "reshape",
             path("put_allocations", "p95_ms"), LOWER),
            (reshape, "PUT server CPU ms/req", "reshape",
             path("put_allocations", "server_cpu_ms_per_req"), LOWER),
            (reshape, "POST /reshaper median ms", "reshape",
             path("reshaper", "median_ms"), LOWER),
            (reshape, "POST /reshaper p95 ms", "reshape",
             path("reshaper", "p95_ms"), LOWER),
            (reshape, "reshaper server CPU ms/req", "reshape",
             path("reshaper", "server_cpu_ms_per_req"), LOWER),
            (reshape, memory[0], "reshape", *memory[1:]),
            ("idle", "worker RSS MB after start", "reshape", idle_rss, LOWER),
        ])


# --------------------------------------------------------------------------
# Aggregation
# --------------------------------------------------------------------------

def runs_of(doc: Result, label: str, scenario: str) -> list[Result]:
    return [r for r in dig(doc, "runs", label, scenario) or []
            if not r.get("failed")]


def median_of(doc: Result, label: str, scenario: str, get: Getter) -> Any:
    values = [get(r) for r in runs_of(doc, label, scenario)]
    values = [v for v in values if v is not None]
    if not values:
        return None
    if all(isinstance(v, (int, float)) for v in values):
        return statistics.median(values)
    return values[0] if len(set(values)) == 1 else "varies"


def gain(upstream: Any, ours: Any, better: str) -> Optional[float]:
    """How many times better ours is (>1 better, <1 worse)."""
    if not all(isinstance(v, (int, float)) for v in (upstream, ours)):
        return None
    if better == LOWER and ours > 0:
        return upstream / ours
    if better == HIGHER and upstream > 0:
        return ours / upstream
    return None


def labels(doc: Result) -> list[str]:
    order = [s["label"] for s in doc.get("sides", [])]
    return [x for x in ("upstream", "ours") if x in order] or order


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value.is_integer() and abs(value) >= 100:
            return "%d" % value
        return ("%.0f" % value if abs(value) >= 100 else
                "%.1f" % value if abs(value) >= 10 else "%.2f" % value)
    return str(value)


def figure_rows(doc: Result) -> list[list[str]]:
    sides = labels(doc)
    both = sides == ["upstream", "ours"]
    rows = []
    for title, metric, scenario, get, better in metric_rows(
            doc.get("options", {})) + churn_rows(doc):
        values = [median_of(doc, s, scenario, get) for s in sides]
        if all(v is None for v in values):
            continue
        row = [title, metric] + [fmt(v) for v in values]
        if both:
            if better == EQUAL:
                row.append("same" if values[0] == values[1] else "DIFFERENT")
            else:
                g = gain(values[0], values[1], better)
                row.append("%sx" % fmt(g) if g is not None else "")
        rows.append(row)
    return rows


def summary_specs(options: Result,
                  churn: Optional[list[tuple[str, int]]] = None
                  ) -> list[tuple]:
    """(workload, scenario, latency, rate, server CPU, worker peak) getters
    of the at-a-glance table; None where a figure does not apply."""
    large = _count(options.get("large_providers"))
    mem = peak("memory", "workers_peak_rss_mb")
    churned = [("%s (median: candidates p50; rate: scheduled/s; CPU: per "
                "scheduled)" % churn_title(options, limit), scenario,
                phase(limit, "churn", "latency", "GET /allocation_candidates",
                      "p50_ms"),
                phase(limit, "churn", "scheduled_per_s"),
                phase(limit, "churn", "server_cpu_ms_per_scheduled"), mem)
               for scenario, limit in churn or []]

    def read(title: str, scenario: str, *prefix: str) -> tuple:
        return (title, scenario, path(*prefix, "latency", "median_ms"),
                path(*prefix, "throughput", "requests_per_s"),
                path(*prefix, "throughput", "server_cpu_ms_per_req"), mem)
    return [
        read("1 allocation candidates, flat %s"
             % _count(options.get("providers")), "flat"),
        read("1 allocation candidates, flat %s" % large, "flat-large",
             "candidates"),
        read("2 allocation candidates, nested %s trees"
             % _count(options.get("trees")), "nested"),
        read("5 GET /resource_providers, %s" % large, "flat-large",
             "providers_query"),
        ("3 claims (rate: claims/s)", "write",
         path("claims", "put_median_ms"), path("claims", "claims_per_s"),
         path("claims", "server_cpu_ms_per_claim"), mem),
        ("4 wide trees, limit=10, %s hosts (1 worker)"
         % _count(options.get("wide_hosts")), "wide",
         path("limited", "query_ms"), None, None,
         peak("limited", "worker_peak_rss_mb")),
        ("6 PUT /allocations, %s consumers"
         % _count(options.get("reshape_consumers")), "reshape",
         path("put_allocations", "median_ms"), None,
         path("put_allocations", "server_cpu_ms_per_req"), mem),
        ("6 POST /reshaper, %s consumers"
         % _count(options.get("reshape_consumers")), "reshape",
         path("reshaper", "median_ms"), None,
         path("reshaper", "server_cpu_ms_per_req"), mem),
    ] + churned


def _summary_head(doc: Result) -> list[str]:
    sides = labels(doc)
    if sides == ["upstream", "ours"]:
        return ["workload", "median ms (upstream / ours)", "gain",
                "req/s (upstream / ours)", "gain",
                "server CPU ms/req (upstream / ours)", "gain",
                "worker peak MB (upstream / ours)"]
    return ["workload", "median ms", "req/s", "server CPU ms/req",
            "worker peak MB"]


def summary_rows(doc: Result) -> list[list[str]]:
    """One row per workload: latency, rate, CPU and memory side by side."""
    sides = labels(doc)
    both = sides == ["upstream", "ours"]
    rows = []
    for spec in summary_specs(doc.get("options", {}), churn_phases(doc)):
        title, scenario, getters = spec[0], spec[1], spec[2:]
        if not any(runs_of(doc, s, scenario) for s in sides):
            continue
        row = [title]
        for get, better in zip(getters, (LOWER, HIGHER, LOWER, None),
                               strict=True):
            values = [median_of(doc, s, scenario, get) if get else None
                      for s in sides]
            row.append(" / ".join(fmt(v) for v in values))
            if both and better:
                g = gain(values[0], values[1], better)
                row.append("%sx" % fmt(g) if g is not None else "-")
        rows.append(row)
    return rows


# --------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------

def _check(ok: Optional[bool]) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def target_rows(doc: Result) -> list[list[str]]:
    """[target, measured, status] for every target the file can judge."""
    rows: list[list[str]] = []

    def m(label: str, scenario: str, get: Getter) -> Any:
        return median_of(doc, label, scenario, get)

    def has(scenario: str, label: str = "ours") -> bool:
        return bool(runs_of(doc, label, scenario))

    options = doc.get("options", {})
    large = _count(options.get("large_providers"))
    reads = [("1 flat %s" % _count(options.get("providers")), "flat", ()),
             ("1 flat %s" % large, "flat-large", ("candidates",)),
             ("2 nested %s trees" % _count(options.get("trees")), "nested",
              ()),
             ("5 GET /resource_providers %s" % large, "flat-large",
              ("providers_query",))]
    for title, scenario, prefix in reads:
        if not (has(scenario) and has(scenario, "upstream")):
            continue
        for metric, keys, better in (
                ("median latency >= 10x lower", ("latency", "median_ms"),
                 LOWER),
                ("throughput >= 10x higher", ("throughput",
                                              "requests_per_s"), HIGHER)):
            g = gain(m("upstream", scenario, path(*prefix, *keys)),
                     m("ours", scenario, path(*prefix, *keys)), better)
            rows.append(["%s: %s" % (title, metric),
                         "%sx" % fmt(g) if g is not None else "-",
                         _check(None if g is None else g >= 10)])
        a = m("upstream", scenario, path(*prefix, "response", "digest"))
        b = m("ours", scenario, path(*prefix, "response", "digest"))
        rows.append(["%s: identical response content" % title,
                     "%s / %s" % (a, b), _check(None if a is None
                                                or b is None else a == b)])

    for title, scenario, prefix in reads[:3]:
        if has(scenario) and has(scenario, "upstream"):
            g = gain(m("upstream", scenario, cold_first(*prefix)),
                     m("ours", scenario, cold_first(*prefix)), LOWER)
            rows.append(["%s: cold first answer >= 5x faster" % title,
                         "%sx" % fmt(g) if g is not None else "-",
                         _check(None if g is None else g >= 5)])

    if has("write"):
        if has("write", "upstream"):
            g = gain(m("upstream", "write", path("claims", "claims_per_s")),
                     m("ours", "write", path("claims", "claims_per_s")),
                     HIGHER)
            rows.append(["3 claims: >= 10x claims/s", "%sx" % fmt(g)
                         if g is not None else "-",
                         _check(None if g is None else g >= 10)])
        worst = max((r.get("verify", {}).get("overcommitted", 0) or 0)
                    for r in runs_of(doc, "ours", "write"))
        rows.append(["3 claims: zero overcommitted providers",
                     "%d pairs (worst round)" % worst, _check(worst == 0)])
        lost = [(dig(r, "verify", "usage_mismatches") or 0)
                + abs((dig(r, "claims", "claims") or 0)
                      - (dig(r, "verify", "capacity_in_claims") or 0))
                for r in runs_of(doc, "ours", "write")]
        rows.append(["3 claims: zero lost claims (usages = 204s, "
                     "claims = capacity)", "%d (worst round)" % max(lost),
                     _check(max(lost) == 0)])

    if has("wide"):
        q = m("ours", "wide", path("limited", "query_ms"))
        rows.append(["4 wide: limit=10 under 100 ms", "%s ms" % fmt(q),
                     _check(None if q is None else q < 100)])
        idle = [m("upstream", s, idle_rss) for s in ("reshape", "flat-large")]
        idle = [v for v in idle if v is not None]
        ours_peak = m("ours", "wide", peak("limited", "worker_peak_rss_mb"))
        if idle and ours_peak is not None:
            limit = min(idle) + 50
            rows.append(["4 wide: worker peak RSS <= upstream idle + 50 MB",
                         "%s <= %s MB" % (fmt(ours_peak), fmt(limit)),
                         _check(ours_peak <= limit)])

    rows += churn_targets(doc, m, has)

    workers_peak = peak("memory", "workers_peak_rss_mb")
    for scenario, get in [("flat", workers_peak),
                          ("flat-large", workers_peak),
                          ("nested", workers_peak), ("write", workers_peak),
                          ("wide", peak("limited", "worker_peak_rss_mb")),
                          ("reshape", workers_peak)] + [
            (c, workers_peak) for c in sorted({s for s, _ in
                                               churn_phases(doc)})]:
        if has(scenario) and has(scenario, "upstream"):
            a, b = m("upstream", scenario, get), m("ours", scenario, get)
            if a is not None and b is not None:
                rows.append(["memory: %s worker peak RSS <= upstream's"
                             % scenario, "%s vs %s MB" % (fmt(b), fmt(a)),
                             _check(b <= a)])
    return rows


def churn_targets(doc: Result, m: Callable[[str, str, Getter], Any],
                  has: Callable[..., bool]) -> list[list[str]]:
    rows: list[list[str]] = []
    options = doc.get("options", {})
    for scenario, limit in churn_phases(doc):
        if not has(scenario):
            continue
        title = churn_title(options, limit)
        both = has(scenario, "upstream")

        def f(*keys: str, limit: int = limit) -> Getter:
            return phase(limit, "churn", *keys)
        if both:
            g = gain(m("upstream", scenario, f("scheduled_per_s")),
                     m("ours", scenario, f("scheduled_per_s")), HIGHER)
            rows.append(["%s: >= 12x scheduled instances/s" % title,
                         "%sx" % fmt(g) if g is not None else "-",
                         _check(None if g is None else g >= 12)])
        cpu = m("ours", scenario, f("server_cpu_ms_per_scheduled"))
        rows.append(["%s: server CPU <= 10 ms per scheduled instance" % title,
                     "%s ms" % fmt(cpu),
                     _check(None if cpu is None else cpu <= 10)])
        if both:
            slow = []
            for kind in CHURN_KINDS:
                p99 = m("ours", scenario, f("latency", kind, "p99_ms"))
                p50 = m("upstream", scenario, f("latency", kind, "p50_ms"))
                if p99 is not None and p50 is not None and p99 >= p50:
                    slow.append("%s %s >= %s" % (kind, fmt(p99), fmt(p50)))
            rows.append(["%s: every p99 below upstream's p50" % title,
                         "; ".join(slow) or "all below",
                         _check(not slow)])
        worst = 0
        for r in runs_of(doc, "ours", scenario):
            audit = phase(limit, "audit")(r) or {}
            worst = max(worst, sum(audit.get(k) or 0 for k in (
                "overcommitted", "usage_mismatches", "claims_missing",
                "phantom_allocations", "unreadable"))
                + sum(1 for c in audit.get("candidate_checks") or []
                      if not c.get("ok")))
        rows.append(["%s: audit clean (no overcommit, usages = allocations, "
                     "every 2xx claim present, candidates = what fits)"
                     % title, "%d findings (worst round)" % worst,
                     _check(worst == 0)])
    return rows


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def header(doc: Result) -> list[str]:
    machine, options = doc.get("machine", {}), doc.get("options", {})
    lines = ["%s; %s CPUs, %s GB RAM, %s; --db %s, %s gunicorn workers, "
             "%s round(s)%s" % (machine.get("date"), machine.get("cpus"),
                                machine.get("memory_gb"),
                                machine.get("platform"), options.get("db"),
                                options.get("workers"), options.get("rounds"),
                                ", --quick sizes" if options.get("quick")
                                else "")]
    if options.get("server_env"):
        lines[0] += "; server environment %s" % ", ".join(
            "%s=%s" % kv for kv in sorted(options["server_env"].items()))
    for side in doc.get("sides", []):
        if side.get("placement_version"):
            what = "openstack-placement %s" % side["placement_version"]
        else:
            what = "this repository at %s" % (side.get("revision") or "?")
        if side.get("gunicorn_version"):
            what += ", gunicorn %s" % side["gunicorn_version"]
        lines.append("%s: %s (%s)" % (side["label"], what,
                                      side.get("placement_path")
                                      or side["venv"]))
    return lines


def problems(doc: Result) -> list[str]:
    """Every problem, and one line per run whose phases were noisy."""
    out = []
    for label, per in (doc.get("runs") or {}).items():
        for scenario, runs in per.items():
            for i, r in enumerate(runs):
                where = "%s %s round %d" % (label, scenario, i + 1)
                for p in r.get("problems") or []:
                    out.append("%s: %s" % (where, " ".join(p.split())[:200]))
                noise = r.get("noise") or []
                if noise:
                    shares = [int(x) for n in noise
                              for x in re.findall(r"= (\d+)% of the", n)]
                    out.append("%s: NOISE in %d phase(s), other processes "
                               "used up to %s%% of the machine" % (
                                   where, len(noise),
                                   max(shares) if shares else "?"))
    return out


def _text_table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=False)]
    line = lambda cells: "  ".join(  # noqa: E731
        str(c).ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()
    return [line(head), line(["-" * w for w in widths])] + [line(r)
                                                            for r in rows]


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def _figure_head(doc: Result) -> list[str]:
    sides = labels(doc)
    head = ["workload", "metric"] + sides
    if sides == ["upstream", "ours"]:
        head.append("gain")
    return head


def _rst_table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A reStructuredText simple table (no cell may be empty)."""
    rows = [[str(c) or "-" for c in r] for r in rows]
    widths = [max(len(str(x)) for x in col)
              for col in zip(head, *rows, strict=False)]
    border = "  ".join("=" * w for w in widths)
    line = lambda cells: "  ".join(  # noqa: E731
        str(c).ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()
    return [border, line(head), border] + [line(r) for r in rows] + [border]


STYLES = {
    # style: (table, bullet, problem-escaping)
    "text": (_text_table, "  ", lambda t: t),
    "markdown": (_md_table, "- ", lambda t: t.replace("|", "/")),
    "rst": (_rst_table, "* ", lambda t: t.replace("*", "\\*")),
}


def render(doc: Result, style: str = "text", full: bool = False) -> str:
    """Header, the at-a-glance summary, targets, problems; with ``full``
    also every figure."""
    table, bullet, escape = STYLES[style]
    head = header(doc)
    lines = [head[0], ""] + [bullet + h for h in head[1:]]
    summary = summary_rows(doc)
    if summary:
        lines += [""] + table(_summary_head(doc), summary)
    if full:
        lines += [""] + table(_figure_head(doc), figure_rows(doc))
    targets = target_rows(doc)
    if targets:
        lines += [""] + table(["target", "measured", "status"], targets)
    issues = problems(doc)
    if issues:
        lines += ["", "Problems and noise reported by the run:", ""]
        lines += [bullet + escape(i) for i in issues]
    return "\n".join(lines) + "\n"


def print_text(doc: Result, full: bool = False) -> None:
    print(render(doc, "text", full), end="")
