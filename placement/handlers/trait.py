"""Handlers for trait URLs (being written)."""

from placement import errors


def list_provider_traits(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("list_provider_traits is not implemented yet")


def set_provider_traits(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("set_provider_traits is not implemented yet")


def delete_provider_traits(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("delete_provider_traits is not implemented yet")


def list_traits(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("list_traits is not implemented yet")


def show_trait(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("show_trait is not implemented yet")


def create_trait(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("create_trait is not implemented yet")


def delete_trait(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("delete_trait is not implemented yet")

