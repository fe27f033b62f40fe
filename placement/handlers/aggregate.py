"""Handlers for aggregate URLs (being written)."""

from placement import errors


def list_aggregates(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("list_aggregates is not implemented yet")


def set_aggregates(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("set_aggregates is not implemented yet")

