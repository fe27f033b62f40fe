"""Handlers for resource class URLs (being written)."""

from placement import errors


def list_resource_classes(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("list_resource_classes is not implemented yet")


def create_resource_class(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("create_resource_class is not implemented yet")


def show_resource_class(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("show_resource_class is not implemented yet")


def update_resource_class(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("update_resource_class is not implemented yet")


def delete_resource_class(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("delete_resource_class is not implemented yet")

