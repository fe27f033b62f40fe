"""Trees, groups and queries for the candidate unit tests."""

from __future__ import annotations

from typing import Any, Iterable

from placement.objects.candidates.trees import Forest, Inventory, Provider, Tree
from placement.query import RequestGroup


def inv(total: int, *, reserved: int = 0, max_unit: int | None = None,
        step: int = 1, ratio: float = 1.0, used: int = 0, min_unit: int = 1
        ) -> Inventory:
    return Inventory(total, reserved, min_unit, total if max_unit is None else max_unit,
                     step, ratio, used)


def forest_of(providers: Iterable[Provider]) -> Forest:
    """A forest of loose providers, grouped into their trees."""
    by_root: dict[int, list[Provider]] = {}
    for provider in providers:
        by_root.setdefault(provider.root_id, []).append(provider)
    return Forest([Tree(by_root[root]) for root in sorted(by_root)])


def forest(*specs: tuple[Any, ...]) -> Forest:
    """Providers from ``(id, parent id, {class: Inventory}, traits, aggs)``."""
    providers: dict[int, Provider] = {}
    for id_, parent, inventories, *rest in specs:
        traits = frozenset(rest[0]) if rest else frozenset()
        aggs = frozenset(rest[1]) if len(rest) > 1 else frozenset()
        root = id_ if parent is None else providers[parent].root_id
        providers[id_] = Provider(id_, "uuid-%d" % id_, parent, root,
                                  dict(inventories), traits, aggs)
    return forest_of(providers.values())


def group(suffix: str = "", resources: dict[str, int] | None = None,
          **fields: Any) -> RequestGroup:
    required = tuple(frozenset([t]) if isinstance(t, str) else frozenset(t)
                     for t in fields.pop("required", ()))
    member_of = tuple(frozenset([a]) for a in fields.pop("member_of", ()))
    return RequestGroup(suffix, tuple((resources or {}).items()),
                        required=required,
                        forbidden=frozenset(fields.pop("forbidden", ())),
                        member_of=member_of,
                        not_member_of=frozenset(fields.pop("not_member_of", ())),
                        **fields)


def wide_hosts(hosts: int) -> Forest:
    """Hosts of two NUMA nodes (VCPU) and eight one-unit GPUs each."""
    specs: list[tuple[Any, ...]] = []
    for h in range(hosts):
        root = h * 100 + 1
        specs.append((root, None, {}))
        specs += [(root + 1 + n, root, {"VCPU": inv(8)}) for n in range(2)]
        specs += [(root + 10 + g, root, {"VGPU": inv(1)}) for g in range(8)]
    return forest(*specs)


def gpu_groups() -> list[RequestGroup]:
    return [group(resources={"VCPU": 1})] + [
        group(str(i), resources={"VGPU": 1}) for i in range(1, 5)]
