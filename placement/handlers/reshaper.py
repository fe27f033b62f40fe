"""Handlers for reshaper URLs (being written)."""

from placement import errors


def reshape(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("reshape is not implemented yet")

