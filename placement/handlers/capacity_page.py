"""The capacity page: ``GET /capacity`` for a browser.

One self-contained HTML document, written on the server: its style sheet
is inline, it has no script and fetches nothing, so it works air-gapped
and behind any proxy.  Figures are shown as bars (a ``div`` whose width is
the share used), one column on a phone, several on a wide screen.  The two
forms (how many more of a request fit, find a provider by name) are plain
GETs of ``/capacity`` itself.

Everything here is pure: figures in, text out; every value shown is
escaped.
"""

from __future__ import annotations

import dataclasses
import datetime
import html
import urllib.parse
from typing import Iterable

from placement.metrics import capacity
from placement.metrics.figures import Figures
from placement.objects.capacity import ClassTotals, TreeProvider


@dataclasses.dataclass
class TreeNode:
    """A provider of a found tree, its usage per class and its children."""

    provider: TreeProvider
    usage: dict[str, tuple[int, float]]
    children: list[TreeNode]


def tree_usage(figures: Figures, providers: list[TreeProvider]) -> list[TreeNode]:
    """The trees of ``providers`` (see ``objects.capacity.trees_named``),
    roots in id order, with each provider's usage from ``figures``."""
    usage: dict[int, dict[str, tuple[int, float]]] = {}
    for provider in providers:
        for (pid, _name, _uuid, _root, _root_name, _parent, rc, total, reserved,
             ratio, _min, _max, _step, used) in figures.by_provider.get(provider.id, ()):
            usage.setdefault(pid, {})[rc] = (used, (total - reserved) * ratio)
    nodes = {p.id: TreeNode(p, usage.get(p.id, {}), []) for p in providers}
    roots = []
    for provider in providers:
        node = nodes[provider.id]
        parent = nodes.get(provider.parent_id) if provider.parent_id else None
        if parent is None:
            roots.append(node)
        else:
            parent.children.append(node)
    return roots


_STYLE = """
:root{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
 color:#1d2430;background:#f6f7f9}
body{margin:0 auto;max-width:72rem;padding:.75rem}
h1{font-size:1.35rem;margin:.2rem 0}h2{font-size:1.1rem;margin:1.2rem 0 .4rem}
h3{font-size:.95rem;margin:.6rem 0 .3rem;word-break:break-all}
.meta{color:#5b6575;font-size:.85rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(17rem,1fr));gap:.6rem}
.card{background:#fff;border:1px solid #dde1e7;border-radius:.4rem;padding:.6rem}
.row{margin:.35rem 0}.label{display:flex;justify-content:space-between;
 font-size:.85rem;gap:.5rem;flex-wrap:wrap}
.bar{height:.7rem;background:#e3e7ed;border-radius:.35rem;overflow:hidden}
.bar>div{height:100%;background:#2f7d4f}.bar>div.warm{background:#c98a14}
.bar>div.hot{background:#c0392b}
table{border-collapse:collapse;width:100%;font-size:.85rem}
td,th{text-align:left;padding:.25rem .35rem;border-bottom:1px solid #e6e9ee}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code,td.meta,.label span{overflow-wrap:anywhere}.scroll{overflow-x:auto}
form{display:flex;flex-wrap:wrap;gap:.4rem;margin:.3rem 0}
input[type=text]{flex:1 1 14rem;padding:.4rem;font-size:1rem}
button{padding:.4rem .8rem;font-size:1rem}
ul.tree{list-style:none;padding-left:1rem;margin:.2rem 0}
.fits{font-size:1.6rem;font-weight:600}
"""


def _number(value: float) -> str:
    if float(value).is_integer():
        return "{:,}".format(int(value))
    return "{:,.1f}".format(value)


def _bar(used: float, capacity_: float, label: str, test_id: str) -> str:
    share = used / capacity_ if capacity_ > 0 else (1.0 if used else 0.0)
    width = max(0.0, min(share, 1.0)) * 100
    heat = " hot" if share >= 0.9 else (" warm" if share >= 0.75 else "")
    return (
        '<div class="row" data-testid="%s"><div class="label"><span>%s</span>'
        '<span><span class="used">%s</span> / <span class="capacity">%s</span>'
        ' used, <span class="free">%s</span> free</span></div>'
        '<div class="bar" title="%.1f%%"><div class="%s" style="width:%.1f%%">'
        "</div></div></div>"
        % (html.escape(test_id), html.escape(label), _number(used),
           _number(capacity_), _number(capacity_ - used), share * 100,
           heat.strip(), width))


def _class_rows(rows: Iterable[ClassTotals], scope: str) -> str:
    return "".join(
        _bar(t.used, t.capacity, "%s (%d providers, %s reserved of %s)" % (
            t.resource_class, t.providers, _number(t.reserved), _number(t.total)),
            "%s:%s" % (scope, t.resource_class))
        for t in rows)


def _flavors(report: capacity.Report, base: str) -> str:
    if not report.flavors:
        return ('<p class="meta">No flavors configured ([metrics] '
                "capacity_requests).</p>")
    rows = []
    for flavor, fits in report.flavors:
        link = "%s/capacity?%s" % (base, flavor.query)
        by_aggregate = ", ".join("%s: %s" % (html.escape(uuid), _number(n))
                                 for uuid, n in sorted(fits.aggregates.items()))
        rows.append(
            '<tr data-testid="flavor:%s"><td><a href="%s">%s</a></td>'
            '<td><code>%s</code></td><td class="n fits-count">%s</td>'
            '<td class="meta">%s</td></tr>'
            % (html.escape(flavor.name), html.escape(link), html.escape(flavor.name),
               html.escape(flavor.query), _number(fits.total), by_aggregate))
    return ('<div class="scroll"><table><tr><th>Flavor</th><th>Request</th>'
            '<th class="n">More fit</th><th>Per aggregate</th></tr>%s</table></div>'
            % "".join(rows))


def _hosts(figures: Figures) -> str:
    rows = []
    for host in capacity.fullest_hosts(figures):
        classes = "".join(_bar(used, cap, c, "host:%s:%s" % (host.name, c))
                          for c, (used, cap) in host.classes.items())
        rows.append('<div class="card"><h3>%s <span class="meta">%.0f%% full'
                    "</span></h3>%s</div>"
                    % (html.escape(host.name), host.fullest * 100, classes))
    return '<div class="grid" id="hosts">%s</div>' % "".join(rows)


def _tree(node: TreeNode) -> str:
    bars = "".join(_bar(used, cap, c, "tree:%s:%s" % (node.provider.name, c))
                   for c, (used, cap) in node.usage.items())
    children = "".join(_tree(child) for child in node.children)
    return ('<li><strong>%s</strong> <span class="meta">%s</span>%s%s</li>'
            % (html.escape(node.provider.name), html.escape(node.provider.uuid),
               bars, '<ul class="tree">%s</ul>' % children if children else ""))


def render_page(report: capacity.Report, *, asked: capacity.Fits | None,
                query: list[tuple[str, str]], provider: str | None,
                trees: list[TreeProvider] | None, base: str) -> str:
    """The whole page."""
    figures = report.figures
    read_at = datetime.datetime.fromtimestamp(
        report.read_at, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    query_text = urllib.parse.unquote(urllib.parse.urlencode(query))
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        "<title>Placement capacity</title><style>%s</style></head><body>" % _STYLE,
        '<h1>Placement capacity</h1><p class="meta">%s providers; figures read '
        "%s (at most once per capacity interval).</p>"
        % (_number(figures.providers), read_at),
        '<h2>Resource classes</h2><div class="card" id="classes">%s</div>'
        % (_class_rows(figures.cloud, "cloud") or '<p class="meta">No inventory.</p>'),
        "<h2>How many more fit</h2>",
        '<form method="get" action="%s/capacity"><input type="text" '
        'name="resources" placeholder="VCPU:2,MEMORY_MB:4096" value="%s" '
        'aria-label="resources"><button type="submit">Count</button></form>'
        % (html.escape(base), html.escape(dict(query).get("resources", ""))),
    ]
    if asked is not None:
        parts.append(
            '<div class="card" data-testid="asked"><span class="fits" id="fits">%s'
            '</span> more of <code>%s</code> fit, on %s hosts.</div>'
            % (_number(asked.total), html.escape(query_text),
               _number(len(asked.hosts))))
    parts += [
        _flavors(report, html.escape(base)),
        "<h2>Aggregates</h2>",
        '<div class="grid">%s</div>' % "".join(
            '<div class="card"><h3>%s</h3>%s</div>'
            % (html.escape(uuid), _class_rows(rows, "aggregate:" + uuid))
            for uuid, rows in sorted(figures.aggregates.items()))
        if figures.aggregates else '<p class="meta">No aggregates.</p>',
        "<h2>Fullest hosts</h2>", _hosts(figures),
        "<h2>Find a provider</h2>",
        '<form method="get" action="%s/capacity"><input type="text" '
        'name="provider" placeholder="part of a provider name" value="%s" '
        'aria-label="provider"><button type="submit">Find</button></form>'
        % (html.escape(base), html.escape(provider or "")),
    ]
    if trees is not None:
        found = tree_usage(figures, trees)
        parts.append('<div class="card" id="trees">%s</div>' % (
            '<ul class="tree">%s</ul>' % "".join(_tree(n) for n in found)
            if found else '<p class="meta">No provider is so named.</p>'))
    parts.append("</body></html>")
    return "".join(parts)
