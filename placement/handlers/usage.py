"""Handlers for usage URLs (being written)."""

from placement import errors


def list_provider_usages(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("list_provider_usages is not implemented yet")


def get_total_usages(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("get_total_usages is not implemented yet")

