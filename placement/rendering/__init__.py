"""JSON text of the largest responses, written directly.

Most handlers build a dict and let :func:`placement.responses.json` dump
it.  The allocation candidates and provider lists run to megabytes, and
building dicts only to serialise them costs more than the search itself;
so their text is written here from fragments, byte for byte what
``json.dumps`` (default separators, as Placement's answers have) would
write for the same document.  The unit tests hold every writer against
``json.dumps`` at each microversion where its shape changes.

Text written for what the worker keeps is kept with it, set whole once
and never changed in place (another thread sees it missing or written):
a candidate list holds its requests' texts
(:attr:`placement.objects.candidates.CandidateList.texts`), a tree its
summaries' text (:attr:`placement.objects.candidates.Tree.summaries`),
and a listed provider's text is kept in :class:`placement.kept.Texts`
under the provider's key.
"""

from __future__ import annotations

import bisect
import itertools
import operator

# Bytes of texts joined into one part of a body (see joined).
PART_SIZE = 256 * 1024


def joined(texts: list[bytes]) -> list[bytes]:
    """``b", ".join(texts)`` in parts of about PART_SIZE bytes, which the
    server sends one after the other.  The texts of a large answer are
    mostly kept (those of kept lists, trees and providers): one joined
    copy of them all lived beside them while the answer was sent, 8 MB
    for 10,000 candidates.  A few dozen writes instead of one cost nothing
    next to writing such an answer."""
    # Where each text ends, counting a separator after each, summed in C:
    # a per-text loop in Python cost a thousand-candidate answer 0.4 ms.
    ends = list(itertools.accumulate(map(operator.add, map(len, texts), itertools.repeat(2))))
    parts: list[bytes] = []
    start, count = 0, len(texts)
    while start < count:
        # The first text at which the part reaches PART_SIZE, or the last.
        last = min(bisect.bisect_left(ends, (ends[start - 1] if start else 0) + PART_SIZE, start),
                   count - 1)
        some = texts[start:last + 1]
        # Every part after the first begins with the separator.
        parts.append(b", ".join([b"", *some] if parts else some))
        start = last + 1
    return parts
