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


# Resource providers and inventories.  The messages are the texts clients of
# Placement already match on; handlers wrap them in their own sentences.


class ProviderConcurrentUpdate(ConcurrentUpdate):
    message = ("Another thread concurrently updated the resource provider "
               "data. Please retry your update")


class ProviderExists(Duplicate):
    """Name or uuid taken; ``fields`` maps each clashing column to its value."""

    message = "Conflicting resource provider %(fields)s already exists."


class ProviderInUse(InUse):
    message = "Resource provider has allocations."


class ProviderHasChildren(Conflict):
    message = ("Cannot delete resource provider that is a parent of "
               "another. Delete child providers first.")


class ProviderTreeInvalid(Invalid):
    """A parent that does not exist or would break the tree."""

    message = "Object action %(action)s failed because: %(reason)s"


class InventoryInUse(InUse):
    message = ("Inventory for '%(resource_classes)s' on "
               "resource provider '%(resource_provider)s' in use.")


class InventoryExists(Duplicate):
    message = ("Inventory for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s' already exists.")


# Allocations and consumers.  The messages are those clients match on; the
# handlers put them after their own prefixes ("Unable to allocate
# inventory: ...").


class InventoryInvalid(Conflict):
    """Allocations against inventory that is missing or refuses them."""

    message = ("Inventory for '%(resource_class)s' on "
               "resource provider '%(resource_provider)s' invalid.")


class AllocationCapacityExceeded(InventoryInvalid):
    message = ("Unable to create allocation for '%(resource_class)s' on "
               "resource provider '%(resource_provider)s'. The requested "
               "amount would exceed the capacity.")


class AllocationConstraintsViolated(InventoryInvalid):
    message = ("Unable to create allocation for '%(resource_class)s' on "
               "resource provider '%(resource_provider)s'. The requested "
               "amount would violate inventory constraints.")


class ConsumerGenerationConflict(ConcurrentUpdate):
    """The generation a client sent is not the consumer's (null: no consumer)."""

    message = ("consumer generation conflict - expected %(expected)s "
               "but got %(got)s")


class AllocationsConflict(ConcurrentUpdate):
    """Writers kept colliding after every allowed retry."""

    message = ("Another thread concurrently updated the resource provider "
               "data. Please retry your update")


class ConsumerAllocationsNotFound(NotFound):
    message = "No allocations for consumer '%(uuid)s'"


# The reshaper.


class InventoryProviderNotFound(ProviderNotFound):
    """A provider whose inventories a reshape replaces does not exist."""


class ProviderGenerationConflict(ConcurrentUpdate):
    message = ("resource provider generation conflict for provider "
               "%(uuid)s: actual: %(actual)s, given: %(given)s")


# The bare-metal allocation API (objects/baremetal_allocation.py).  Their
# messages are Ironic's, which clients show and match.

class BaremetalAllocationNotFound(NotFound):
    message = "Allocation %(ident)s could not be found."


class BaremetalAllocationNameExists(Duplicate):
    message = "An allocation with name %(name)s already exists."


class BaremetalAllocationUuidExists(Duplicate):
    message = "An allocation with UUID %(uuid)s already exists."


class BaremetalNodeNotFound(NotFound):
    message = "Node %(ident)s could not be found."


class BaremetalNodeAllocationNotFound(NotFound):
    message = "Allocation for node %(ident)s was not found"


class BaremetalNodesNotFound(NotFound):
    message = "Nodes cannot be found: %(idents)s"


class BaremetalBackfillRefused(Conflict):
    message = ("Failed to process allocation %(uuid)s: Cannot backfill an "
               "allocation for node %(node)s: %(reason)s.")
