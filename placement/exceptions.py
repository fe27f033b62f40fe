"""Domain exceptions raised by ``placement.objects``; nothing HTTP here.

Handlers map them to :mod:`placement.errors` with the right status and code.
Names are ``<Thing><Problem>``.
"""

from __future__ import annotations


class PlacementError(Exception):
    """Base of domain errors; ``str(exc)`` is a message fit for clients."""

    message = "An unknown placement error occurred."

    def __init__(self, message: str | None = None, **kwargs: object) -> None:
        self.kwargs = kwargs
        if message is None:
            message = self.message % kwargs if kwargs else self.message
        super().__init__(message)


class NotFound(PlacementError):
    message = "Resource could not be found."


class ProviderNotFound(NotFound):
    message = "No resource provider with uuid %(uuid)s found"


class ResourceClassNotFound(NotFound):
    message = "No such resource class %(name)s."


class TraitNotFound(NotFound):
    message = "No such trait(s): %(names)s."


class InventoryNotFound(NotFound):
    message = "No inventory of class %(resource_class)s for %(provider)s"


class Conflict(PlacementError):
    message = "A conflicting change was made."


class ConcurrentUpdate(Conflict):
    """A generation did not match: someone else changed the thing first."""

    message = "%(thing)s generation conflict; please retry."


class Duplicate(Conflict):
    message = "%(thing)s %(field)s already exists."


class InUse(Conflict):
    message = "%(thing)s is in use."


class CapacityExceeded(Conflict):
    message = "Unable to allocate: insufficient capacity."


class Invalid(PlacementError):
    """Input the schema accepted but the data model refuses (400)."""

    message = "Invalid input."


class ResourceClassExists(Duplicate):
    message = "Resource class %(name)s already exists."


class ResourceClassInUse(Conflict):
    message = ("Cannot delete resource class %(name)s. "
               "Class is in use in inventory.")


class ResourceClassCannotDeleteStandard(Invalid):
    message = "Cannot delete standard resource class %(name)s."


class ResourceClassCannotUpdateStandard(Invalid):
    message = "Cannot update standard resource class %(name)s."


class TraitExists(Duplicate):
    message = "The Trait %(name)s already exists"


class TraitInUse(Conflict):
    message = "The trait %(name)s is in use by a resource provider."


class TraitCannotDeleteStandard(Invalid):
    message = "Cannot delete standard trait %(name)s."
