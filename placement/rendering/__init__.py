"""JSON text of the largest responses, written directly.

Most handlers build a dict and let :func:`placement.responses.json` dump
it.  The allocation candidates and provider lists run to megabytes, and
building dicts only to serialise them costs more than the search itself;
so their text is written here from fragments, byte for byte what
``json.dumps`` (default separators, as Placement's answers have) would
write for the same document.  The unit tests hold every writer against
``json.dumps`` at each microversion where its shape changes.

Text written for an object the worker keeps (a tree, a candidate list, a
listed provider) is kept in :class:`placement.kept.Texts` under that
object's key, never on the object itself: kept objects are not changed.
"""

from __future__ import annotations

# Bytes of texts joined into one part of a body (see joined).
PART_SIZE = 256 * 1024


def joined(texts: list[bytes]) -> list[bytes]:
    """``b", ".join(texts)`` in parts of about PART_SIZE bytes, which the
    server sends one after the other.  The texts of a large answer are
    mostly kept (those of kept lists, trees and providers): one joined
    copy of them all lived beside them while the answer was sent, 8 MB
    for 10,000 candidates.  A few dozen writes instead of one cost nothing
    next to writing such an answer."""
    parts: list[bytes] = []
    start = size = 0
    last = len(texts) - 1
    for index, text in enumerate(texts):
        size += len(text) + 2
        if size >= PART_SIZE or index == last:
            some = texts[start:index + 1]
            # Every part after the first begins with the separator.
            parts.append(b", ".join([b"", *some] if parts else some))
            start, size = index + 1, 0
    return parts
