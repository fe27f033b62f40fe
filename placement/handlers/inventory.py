"""Handlers for inventory URLs (being written)."""

from placement import errors


def list_inventories(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("list_inventories is not implemented yet")


def create_inventory(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("create_inventory is not implemented yet")


def replace_inventories(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("replace_inventories is not implemented yet")


def delete_inventories(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("delete_inventories is not implemented yet")


def show_inventory(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("show_inventory is not implemented yet")


def update_inventory(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("update_inventory is not implemented yet")


def delete_inventory(req):  # type: ignore[no-untyped-def]
    raise errors.ApiError("delete_inventory is not implemented yet")

