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
