"""HTTP handlers, one module per URL family.

A handler authorizes, parses, calls ``placement.objects``, maps domain
exceptions to API errors and renders.  No SQL here.
"""
