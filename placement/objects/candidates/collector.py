"""Keeping Python's cyclic garbage collector out of a candidate search.

A search holds tens of thousands of small objects (rows, providers,
inventories, choices) for the length of one request.  They live long
enough to be promoted to the collector's oldest generation, so the
collector keeps running full collections over the whole process heap while
they are being made: about a third of the CPU of a large nested request,
for nothing, since none of them is part of a reference cycle and reference
counting frees them all when the request ends.

:func:`paused` switches automatic collection off for the duration of a
request and back on afterwards.  Nested or concurrent requests (threads)
share one count, and the collector comes back on only when the last of
them ends, and only if it was on when the first began.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Iterator

_lock = threading.Lock()
_active = 0
_was_enabled = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No automatic cyclic collection inside this block."""
    global _active, _was_enabled
    with _lock:
        if _active == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _was_enabled:
                gc.enable()
