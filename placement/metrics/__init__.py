"""What the service tells Prometheus and operators about itself.

``GET /metrics`` (:mod:`placement.handlers.metrics`) answers in the
Prometheus text format: the instruments of :mod:`.instruments`, which the
request flow feeds in a few places only (requests in
``placement/middleware/metrics.py``, the database in
``placement/db/observe.py`` and ``placement.db.retries.run_with_retries``,
what workers keep in ``placement/kept/``), followed by the capacity
figures of :mod:`.capacity`, brought up to date from the database (only
what changed, :mod:`.kept_figures`) at most once per
``[metrics] capacity_interval``.

Several workers
---------------
Counters and histograms live in each worker process.  With gunicorn or
uwsgi running several workers, a scrape reaches one of them; so that it
reports the sum of all, prometheus-client's multiprocess mode is used
whenever the environment variable ``PROMETHEUS_MULTIPROC_DIR`` names a
directory (it must exist, be empty when the server starts and be shared
by the workers; it is read when ``prometheus_client`` is first
imported).  Each worker then keeps its figures in memory-mapped files
there, and a scrape reads and sums them all.  Without the variable (the
single-process ``placement-api``, or one worker) the figures stay in
memory and are reported as they are.  Capacity figures are not summed:
they come from the database and every worker computes the same.
"""
