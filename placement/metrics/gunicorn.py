"""gunicorn settings for the metrics of several workers.

Use with ``PROMETHEUS_MULTIPROC_DIR`` set (see :mod:`placement.metrics`)::

    PROMETHEUS_MULTIPROC_DIR=/run/placement-metrics \\
        gunicorn -c python:placement.metrics.gunicorn -w 4 \\
        placement.wsgi.api:application

* ``on_starting``: empties the directory when the master starts, so that
  figures of an earlier run are not added to this one's;
* ``child_exit``: tells prometheus-client a worker is gone, so the pool
  gauges (summed over live workers) stop counting it.  Its counters stay:
  what it served was served.

Other gunicorn options still come from the command line or another ``-c``
file, which may import these two functions.
"""

from __future__ import annotations

import glob
import os
from typing import Any

from placement.metrics import instruments


def on_starting(server: Any) -> None:
    directory = os.environ.get(instruments.MULTIPROCESS_ENV)
    if directory:
        for path in glob.glob(os.path.join(directory, "*.db")):
            os.remove(path)


def child_exit(server: Any, worker: Any) -> None:
    if instruments.multiprocess():
        import prometheus_client.multiprocess

        prometheus_client.multiprocess.mark_process_dead(worker.pid)
