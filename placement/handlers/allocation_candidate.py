"""Handlers for allocation candidate URLs (being written)."""

from placement import errors


def list_allocation_candidates(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("list_allocation_candidates is not implemented yet")

