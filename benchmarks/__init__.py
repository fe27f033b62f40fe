"""Side-by-side performance benchmarks of this project and upstream Placement.

``python3 -m benchmarks run`` starts each server the way operators run it
(gunicorn workers on SQLite, PostgreSQL or MariaDB), loads the workloads,
and measures latency, throughput, CPU and memory; ``python3 -m benchmarks
report`` turns the saved JSON into a table.  The harness is standard-library
Python and runs outside the virtualenvs it benchmarks.

The perfload workloads (flat, nested, concurrent claims) and the wide-tree
workload come from the shared benchmark kit in ``../shared/bench`` (see
``sharedbench``); this package adds the workloads that kit lacks
(``scenarios``), the virtualenvs (``venvs``), the alternating A/B runner
(``runner``) and the targets table (``report``).  README.rst explains usage.
"""
