"""Handlers for resource provider URLs (being written)."""

from placement import errors


def list_providers(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("list_providers is not implemented yet")


def create_provider(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("create_provider is not implemented yet")


def show_provider(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("show_provider is not implemented yet")


def update_provider(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("update_provider is not implemented yet")


def delete_provider(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("delete_provider is not implemented yet")

