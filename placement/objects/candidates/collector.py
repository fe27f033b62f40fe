"""Keeping Python's cyclic garbage collector out of a candidate search.

A search holds tens of thousands of small objects (rows, providers,
inventories, choices) for the length of one request.  They live long
enough to be promoted to the collector's oldest generation, so the
collector keeps running full collections over the whole process heap while
they are being made: about a third of the CPU of a large nested request,
for nothing, since none of them is part of a reference cycle and reference
counting frees them all when the request ends.

:func:`pause` switches automatic collection off for the duration of a
request, and the function it returns back on afterwards (:func:`paused`
for a block).  Nested or concurrent requests (threads) share one count,
and the collector comes back on only when the last of them ends, and only
if it was on when the first began.

The collector runs as soon as it is back on: every object the search made
and the worker keeps is new to it, so its first pass goes over all of
them (a couple of milliseconds after a worker's first search).
:class:`AfterSending` puts that pass after the response is sent rather
than before.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Callable, Iterable, Iterator

_lock = threading.Lock()
_active = 0
_was_enabled = False


def pause() -> Callable[[], None]:
    """No automatic cyclic collection until the returned function is
    called (once: it does nothing the next times)."""
    global _active, _was_enabled
    with _lock:
        if _active == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _active += 1
    resumed = False

    def resume() -> None:
        global _active
        nonlocal resumed
        with _lock:
            if resumed:
                return
            resumed = True
            _active -= 1
            if _active == 0 and _was_enabled:
                gc.enable()

    return resume


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No automatic cyclic collection inside this block."""
    resume = pause()
    try:
        yield
    finally:
        resume()


class AfterSending(list):  # type: ignore[type-arg]
    """The parts of a response body, which call ``done`` when the server
    is through with them: WSGI servers call an iterable's ``close`` once
    its last part is sent (and webob once it has read them); failing
    that, when the parts are dropped."""

    __slots__ = ("_done",)

    def __init__(self, parts: Iterable[bytes], done: Callable[[], None]) -> None:
        super().__init__(parts)
        self._done: Callable[[], None] | None = done

    def close(self) -> None:
        done, self._done = self._done, None
        if done is not None:
            done()

    def __del__(self) -> None:
        self.close()
