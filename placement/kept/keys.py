"""Keys of the objects a worker may keep.

A tree, a candidate list, a listed provider or a shared inventory dict
gets a key when it is made: an int never handed out twice in a process,
unlike ``id()`` (which a later object may get once the first is gone).
So what is derived from an object can be kept or looked up under its key
(:class:`placement.kept.Texts`, the judgements of a candidate search) and
is never taken for what another object gives.
"""

from __future__ import annotations

import itertools

# next() on a count is one step under the GIL: threads never share a key.
_KEYS = itertools.count(1)


def new_key() -> int:
    """A key no object of this process had before."""
    return next(_KEYS)
