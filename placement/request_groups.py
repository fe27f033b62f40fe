"""The request groups of ``GET /allocation_candidates``, parsed from the query.

A request for allocation candidates is made of request groups.  The
unnumbered group (``resources``, ``required``, ``member_of``, ``in_tree``)
may be satisfied by several providers of one tree plus sharing providers;
each suffixed group (``resources1``, ``resources_NIC``, ... from 1.25, with
string suffixes from 1.33) must be satisfied by a single provider.  Around
the groups come request-wide parameters: ``limit``, ``group_policy``,
``root_required`` and ``same_subtree``.

This module is pure: :func:`parse` turns the query parameters (every
``(key, value)`` pair, in order) and the microversion into a
:class:`placement.query.CandidateQuery`, raising :class:`placement.errors.BadRequest` with
the message and code clients know.  Names are not checked against the
database here; the handler does that once the structure is valid.  The
value parsers themselves live in :mod:`placement.querystring`.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from typing import Iterable, Sequence

from placement import errors, querystring
from placement.query import UNNUMBERED, CandidateQuery, RequestGroup

Version = tuple[int, int]

GROUP_POLICIES = ("none", "isolate")

# Microversions that changed what the query may hold.
GRANULAR_SINCE: Version = (1, 25)
STRING_SUFFIXES_SINCE: Version = (1, 33)
IN_TREE_SINCE: Version = (1, 31)
ROOT_REQUIRED_SINCE: Version = (1, 35)
SAME_SUBTREE_SINCE: Version = (1, 36)

# The four per-group parameters and a suffix: digits before 1.33, then
# 1-64 letters, digits, "_" or "-".
_GROUP_KEY = re.compile(r"^(resources|required|member_of|in_tree)(.*)$")
_LIMIT = re.compile(r"^[1-9][0-9]*$")


@dataclasses.dataclass
class _RawGroup:
    """The raw values of one group's parameters, in query order."""

    resources: list[str] = dataclasses.field(default_factory=list)
    required: list[str] = dataclasses.field(default_factory=list)
    member_of: list[str] = dataclasses.field(default_factory=list)
    in_tree: list[str] = dataclasses.field(default_factory=list)


def _raw_groups(pairs: Sequence[tuple[str, str]]) -> dict[str, _RawGroup]:
    raw: dict[str, _RawGroup] = {}
    for key, value in pairs:
        match = _GROUP_KEY.match(key)
        if match is None:
            continue
        kind, suffix = match.groups()
        getattr(raw.setdefault(suffix, _RawGroup()), kind).append(value)
    return raw


def _values(pairs: Sequence[tuple[str, str]], key: str) -> list[str]:
    return [value for name, value in pairs if name == key]


def _parse_group(suffix: str, raw: _RawGroup, version: Version,
                 stage: str) -> dict[str, object]:
    """One kind of parameter of one group; ``stage`` names the kind."""
    if stage == "resources":
        # A repeated parameter: the last one counts, as for any key.
        amounts: dict[str, int] = {}
        for value in raw.resources:
            amounts = querystring.resources(value)
        return {"resources": tuple(amounts.items())}
    if stage == "required":
        if not raw.required:
            return {}
        required, forbidden = querystring.required_traits(raw.required, version)
        # Equal any-of sets are one condition.
        unique = tuple(dict.fromkeys(frozenset(s) for s in required))
        return {"required": unique, "forbidden": frozenset(forbidden)}
    if stage == "member_of":
        if not raw.member_of:
            return {}
        any_of, none_of = querystring.member_of(raw.member_of, version, suffix)
        unique_aggs = tuple(dict.fromkeys(frozenset(s) for s in any_of))
        return {"member_of": unique_aggs, "not_member_of": frozenset(none_of)}
    tree = None
    for value in raw.in_tree:
        tree = querystring.in_tree(value)
    return {"in_tree": tree} if tree is not None else {}


def _groups(pairs: Sequence[tuple[str, str]], version: Version
            ) -> tuple[RequestGroup, ...]:
    raw = _raw_groups(pairs)
    # Unnumbered group first, then suffixes in sorted order: the order in
    # which candidates are assembled and mappings are listed.
    suffixes = sorted(raw, key=lambda s: (s != UNNUMBERED, s))
    fields: dict[str, dict[str, object]] = {s: {} for s in suffixes}
    # Each kind of parameter is checked for every group before the next
    # kind, so a request with several mistakes reports the one clients see
    # from Placement.
    for stage in ("resources", "required", "member_of", "in_tree"):
        for suffix in suffixes:
            fields[suffix].update(_parse_group(suffix, raw[suffix], version, stage))
    return tuple(RequestGroup(suffix=s, **fields[s]) for s in suffixes)  # type: ignore[arg-type]


def _root_required(pairs: Sequence[tuple[str, str]], version: Version
                   ) -> tuple[frozenset[str], frozenset[str]]:
    values = _values(pairs, "root_required")
    if not values or version < ROOT_REQUIRED_SINCE:
        return frozenset(), frozenset()
    if len(values) > 1:
        raise errors.BadRequest(
            "Query parameter 'root_required' may be specified only once.",
            code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
    # root_required has no any-of form; ``in:`` is refused with the
    # message of versions that had none.
    required, forbidden = querystring.required_traits(values, min(version, (1, 38)))
    names = frozenset(name for any_of in required for name in any_of)
    conflicts = sorted(names & forbidden)
    if conflicts:
        raise errors.BadRequest(
            "Conflicting required and forbidden traits found in "
            "root_required: %s" % ", ".join(conflicts),
            code=errors.QUERYPARAM_BAD_VALUE)
    return names, frozenset(forbidden)


def _same_subtree(pairs: Sequence[tuple[str, str]], version: Version
                  ) -> tuple[tuple[str, ...], ...]:
    if version < SAME_SUBTREE_SINCE:
        return ()
    lists = []
    for value in _values(pairs, "same_subtree"):
        # Clients join suffixes with ", " as often as with ","; Placement
        # strips the blanks around each.
        suffixes = tuple(dict.fromkeys(s.strip() for s in value.split(",")))
        if UNNUMBERED in suffixes:
            raise errors.BadRequest(
                "Empty string (unsuffixed group) can not be specified in "
                "`same_subtree` ", code=errors.QUERYPARAM_BAD_VALUE)
        lists.append(suffixes)
    return tuple(lists)


def _check_orphans(pairs: Sequence[tuple[str, str]],
                   groups: Sequence[RequestGroup]) -> None:
    """Before 1.36 every group that filters must also ask for resources."""
    resourceless = {g.suffix for g in groups if not g.resources}
    orphans: dict[str, dict[str, None]] = {"required": {}, "member_of": {}}
    for key, _value in pairs:
        match = _GROUP_KEY.match(key)
        if match and match.group(1) in orphans and match.group(2) in resourceless:
            orphans[match.group(1)][key] = None
    if orphans["required"]:
        raise errors.BadRequest(
            "All traits parameters must be associated with resources.  "
            "Found the following orphaned traits keys: %s"
            % ", ".join(orphans["required"]))
    if orphans["member_of"]:
        raise errors.BadRequest(
            "All member_of parameters must be associated with resources. "
            "Found the following orphaned member_of keys: %s"
            % ", ".join(orphans["member_of"]))
    if resourceless and any(g.resources for g in groups):
        raise errors.BadRequest("All request groups must specify resources.")


def _check_structure(groups: Sequence[RequestGroup],
                     same_subtree: Sequence[tuple[str, ...]],
                     group_policy: str | None, version: Version) -> None:
    """The rules that relate groups to each other and to same_subtree."""
    if not any(group.resources for group in groups):
        if version < SAME_SUBTREE_SINCE:
            # Placement words this differently, without a specific code,
            # from granular groups (1.25) until resourceless groups (1.36).
            raise errors.BadRequest(
                "At least one request group (`resources` or `resources{$S}`) "
                "is required.")
        raise errors.BadRequest(
            "There must be at least one resources or resources[$S] parameter.",
            code=errors.QUERYPARAM_MISSING_VALUE)
    in_subtree = {suffix for suffixes in same_subtree for suffix in suffixes}
    resourceless = [g.suffix for g in groups
                    if not g.resources and g.suffix not in in_subtree]
    if resourceless:
        raise errors.BadRequest(
            "Resourceless suffixed group request should be specified in "
            "`same_subtree` query param: bad group(s) - %s." % resourceless,
            code=errors.QUERYPARAM_BAD_VALUE)
    known = [g.suffix for g in groups]
    unknown = sorted(in_subtree - set(known))
    if unknown:
        raise errors.BadRequest(
            "Real suffixes should be specified in `same_subtree`: %s not "
            "found in %s." % (unknown, known),
            code=errors.QUERYPARAM_BAD_VALUE)
    conflicts: list[str] = []
    for group in groups:
        plain = {name for any_of in group.required if len(any_of) == 1
                 for name in any_of}
        clash = sorted(plain & group.forbidden)
        if clash:
            conflicts.extend("required%s: (%s)" % (group.suffix, name)
                             for name in clash)
    if conflicts:
        raise errors.BadRequest(
            "Conflicting required and forbidden traits found in the "
            "following traits keys: %s" % ", ".join(conflicts))
    suffixed = [g for g in groups if not g.is_unnumbered]
    if len(suffixed) > 1 and group_policy is None:
        raise errors.BadRequest(
            'The "group_policy" parameter is required when specifying more '
            'than one "resources{N}" parameter.')


def parse(pairs: Iterable[tuple[str, str]], version: Version) -> CandidateQuery:
    """The query of ``GET /allocation_candidates`` as a :class:`CandidateQuery`.

    ``pairs`` are all query parameters in order (repeated keys included);
    the schema has already accepted their last values.  Of repeated keys
    the last counts, except ``limit`` and ``group_policy``, where the first
    does, as in Placement.
    """
    pairs = list(pairs)
    groups = _groups(pairs, version)
    root_required, root_forbidden = _root_required(pairs, version)
    same_subtree = _same_subtree(pairs, version)
    # The schema saw the last of repeated values, but Placement then uses
    # the first limit and group_policy given, so we do too.  A first value
    # the schema did not see is still checked: Placement fails with a 500
    # on a limit that is not a number, we answer 400.  Any policy but
    # "isolate" behaves as "none", as Placement's does.
    limits = _values(pairs, "limit")
    if limits and not _LIMIT.match(limits[0]):
        raise errors.BadRequest(
            "Invalid query string parameters: '%s' does not match '%s'"
            % (limits[0], _LIMIT.pattern))
    policies = _values(pairs, "group_policy")
    group_policy = policies[0] if policies else None
    if version < SAME_SUBTREE_SINCE:
        _check_orphans(pairs, groups)
    _check_structure(groups, same_subtree, group_policy, version)
    return CandidateQuery(
        groups=groups,
        # A limit past any count there can be means no limit; clamped so
        # it still fits the machine's integers.
        limit=min(int(limits[0]), sys.maxsize) if limits else None,
        group_policy=group_policy,
        root_required=root_required,
        root_forbidden=root_forbidden,
        same_subtree=same_subtree,
    )
