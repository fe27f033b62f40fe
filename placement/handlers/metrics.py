"""Handler for ``GET /metrics`` (not in OpenStack Placement).

Served only with ``[metrics] enabled`` (otherwise the URL does not exist:
404), under the ``placement:metrics`` policy rule.  Answers the Prometheus
text format (version 0.0.4), whatever the microversion: the service's own
instruments (summed over every worker in multiprocess mode, see
:mod:`placement.metrics`), then the capacity gauges, openstack-exporter's
among them (:mod:`placement.metrics.capacity`).
"""

from __future__ import annotations

import webob

from placement import policies
from placement.metrics import capacity
from placement.request import PlacementRequest

# The text format's media type, as Prometheus asks for it.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def show_metrics(req: PlacementRequest) -> webob.Response:
    """GET /metrics: 200 with the metrics; 403 unless policy allows."""
    req.authorize(policies.metrics.VIEW)
    # Imported when first asked: prometheus-client costs every worker
    # memory, and the route exists only with [metrics] enabled.
    from placement.metrics import instruments

    # Sent as pieces: the capacity text is megabytes at 10,000 providers,
    # and joining it would copy it all at every scrape.
    pieces = [instruments.exposition(), *capacity.exposition(capacity.current(req.ctx))]
    resp = webob.Response(status=200, charset=None, app_iter=pieces)
    resp.content_length = sum(len(piece) for piece in pieces)
    resp.headers["Content-Type"] = CONTENT_TYPE
    resp.headers["Cache-Control"] = "no-cache"
    return resp
