"""Calls run in threads released at the same moment, for race tests."""

from __future__ import annotations

import threading
from typing import Any, Callable


def together(*calls: Callable[[], Any], timeout: float | None = None) -> list[Any]:
    """Run the calls in threads that start at the same moment; their
    results in order.  The first exception a call raised is raised here,
    once every thread has ended (or ``timeout`` seconds passed for each)."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = calls[index]()
        except BaseException as exc:  # re-raised below
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results
