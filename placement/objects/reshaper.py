"""The reshaper: replace the inventories of several providers and the
allocations of several consumers in one transaction.

Typical use: a compute node's VGPU inventory moves from the root provider
to new child providers, and the allocations of every instance using it
must move along at the same moment.

The order inside the transaction is what makes that possible:

1. lock every provider named in the inventories or the allocations, and
   every provider the consumers hold allocations on (one
   ``lock_providers``), then compare the provider generations the client
   sent with the stored ones;
2. replace the inventories, without asking whether allocations still use
   a removed class: they may be about to move;
3. check the new allocations against the new inventories, and write them;
4. refuse the whole change if a class removed in step 2 is still used by
   allocations (those of consumers not in the request, typically).

So the state in between may violate capacity; the state committed never
does.  Collisions with other writers retry the whole transaction, like
allocation writes do.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence, TYPE_CHECKING

import sqlalchemy as sa

from placement import exceptions
from placement.db import tables
from placement.objects import allocation as alloc_obj
from placement.objects import inventory as inv_obj
from placement.objects import resource_class as rc_obj
from placement.objects import resource_provider as rp_obj

if TYPE_CHECKING:
    from placement.context import RequestContext

_ALLOC = tables.allocations
_INV = tables.inventories


@dataclasses.dataclass(frozen=True)
class ProviderInventories:
    """The whole inventory one provider is to have, and the generation
    the client last saw it at."""

    provider_uuid: str
    generation: int
    inventories: Mapping[str, inv_obj.InventoryFields]


def _refuse_uninventoried_allocations(conn: sa.engine.Connection,
                                      provider: rp_obj.ResourceProvider) -> None:
    """InventoryInUse when allocations on the provider use a class it no
    longer has inventory of."""
    inventoried = sa.select(_INV.c.resource_class_id).where(
        _INV.c.resource_provider_id == provider.id)
    rows = conn.execute(
        sa.select(_ALLOC.c.resource_class_id).distinct()
        .where(_ALLOC.c.resource_provider_id == provider.id,
               _ALLOC.c.resource_class_id.not_in(inventoried))
        .order_by(_ALLOC.c.resource_class_id)).all()
    if rows:
        names = rc_obj.names_by_id(conn, [row[0] for row in rows])
        raise exceptions.InventoryInUse(
            resource_classes=", ".join(names[row[0]] for row in rows),
            resource_provider=provider.uuid)


def _bump_as_placement_does(conn: sa.engine.Connection,
                            inventories: Sequence[ProviderInventories],
                            current: Mapping[str, rp_obj.ResourceProvider],
                            allocated_ids: set[int]) -> None:
    """Leave every generation where OpenStack Placement's reshape leaves it.

    Placement reshapes in steps that each bump: an interim inventory (the
    old and new classes together) and then the final one for each provider
    in ``inventories`` (a single step when the new inventory is empty),
    and between them one allocation write, which bumps the providers any
    allocation write bumps (:func:`allocation.bumped_provider_ids`), once
    each however many consumers move.  A reshape of a parent and a child
    with two consumers thus moves both by three.  Clients that chain
    reshapes or cache generations need the same numbers, so we add the
    same amounts, though one transaction needs only one bump.
    ``replace_in`` has already made one bump for each inventory provider.
    """
    alloc_obj.bump_providers_in(conn, allocated_ids)
    alloc_obj.bump_providers_in(conn, {
        current[item.provider_uuid].id for item in inventories if item.inventories})


def reshape(ctx: RequestContext, inventories: Sequence[ProviderInventories],
            claims: Sequence[alloc_obj.ConsumerClaim]) -> None:
    """Raises InventoryProviderNotFound, ProviderNotFound (in allocations),
    ProviderGenerationConflict, ConsumerGenerationConflict,
    ResourceClassNotFound, InventoryInUse, InventoryInvalid and its
    subclasses, or AllocationsConflict; nothing is written then.
    """
    uuids = [item.provider_uuid for item in inventories]

    def attempt() -> None:
        with alloc_obj.writing(ctx, claims, also_lock=uuids) as (conn, plan):
            for uuid in uuids:
                if uuid not in plan.also_locked:
                    raise exceptions.InventoryProviderNotFound(uuid=uuid)
            state = alloc_obj.begin_in(conn, plan)
            current = rp_obj.get_by_uuids_in(conn, uuids)
            for item in inventories:
                provider = current.get(item.provider_uuid)
                if provider is None:
                    raise exceptions.InventoryProviderNotFound(uuid=item.provider_uuid)
                if provider.generation != item.generation:
                    raise exceptions.ProviderGenerationConflict(
                        uuid=item.provider_uuid, actual=provider.generation,
                        given=item.generation)
            alloc_obj.check_claims_in(plan, state)
            for item in inventories:
                inv_obj.replace_in(conn, current[item.provider_uuid], item.inventories,
                                   expected_generation=item.generation,
                                   check_in_use=False)
            alloc_obj.check_capacity_and_apply_in(conn, plan, state)
            for provider in current.values():
                _refuse_uninventoried_allocations(conn, provider)
            _bump_as_placement_does(conn, inventories, current,
                                    alloc_obj.bumped_provider_ids(plan, state))

    alloc_obj.with_retries(ctx, "reshaper.reshape", attempt)
