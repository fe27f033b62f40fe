"""Handlers for allocation URLs (being written)."""

from placement import errors


def list_provider_allocations(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("list_provider_allocations is not implemented yet")


def set_allocations(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("set_allocations is not implemented yet")


def list_allocations(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("list_allocations is not implemented yet")


def set_allocations_for_consumer(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("set_allocations_for_consumer is not implemented yet")


def delete_allocations(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("delete_allocations is not implemented yet")

