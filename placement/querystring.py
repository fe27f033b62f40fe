"""Parsers for the values of filtering query parameters.

``resources=VCPU:2,MEMORY_MB:1024``, ``required=A,!B`` or ``required=in:A,B``,
``member_of=<agg>``, ``member_of=in:<agg>,<agg>``, ``member_of=!<agg>`` or
``member_of=!in:...``, and ``in_tree=<uuid>``, as ``GET /resource_providers``
and ``GET /allocation_candidates`` take them.

Each parser is pure: it takes the raw value(s) and, where a feature depends
on it, the request's microversion, and returns plain Python values or
raises :class:`placement.errors.BadRequest` with the message Placement
clients know.  These messages carry no specific error code
(``placement.undefined_code``).  Names are not checked against the
database here: unknown classes and traits are the caller's 400s.
"""

from __future__ import annotations

from typing import Sequence

from oslo_utils import uuidutils

from placement import errors

Version = tuple[int, int]

# Microversions that widened what these parameters accept.
FORBIDDEN_TRAITS_SINCE: Version = (1, 22)
MULTIPLE_MEMBER_OF_SINCE: Version = (1, 24)
FORBIDDEN_AGGREGATES_SINCE: Version = (1, 32)
ANY_TRAITS_SINCE: Version = (1, 39)

_RESOURCES_FORM = ("Badly formed resources parameter. Expected resources "
                   "query string parameter in form: "
                   "?resources=VCPU:2,MEMORY_MB:1024. Got: %s.")


def resources(value: str) -> dict[str, int]:
    """``"VCPU:2,MEMORY_MB:1024"`` -> ``{"VCPU": 2, "MEMORY_MB": 1024}``.

    Amounts must be integers of at least 1.  A class named twice keeps the
    last amount.
    """
    if not value.strip():
        raise errors.BadRequest(_RESOURCES_FORM % "empty string")
    amounts: dict[str, int] = {}
    for item in value.split(","):
        parts = item.split(":")
        if len(parts) != 2:
            raise errors.BadRequest(_RESOURCES_FORM % item)
        name, raw_amount = parts
        try:
            amount = int(raw_amount)
        except ValueError:
            raise errors.BadRequest(
                "Requested resource %s expected positive integer amount. "
                "Got: %s." % (name, raw_amount)) from None
        if amount < 1:
            raise errors.BadRequest(
                "Requested resource %s requires amount >= 1. Got: %d."
                % (name, amount))
        amounts[name] = amount
    return amounts


def _bad_traits(detail: str) -> errors.BadRequest:
    return errors.BadRequest("Invalid query string parameters: " + detail)


def trait_value(value: str, allow_forbidden: bool = False,
                allow_any: bool = False) -> tuple[list[set[str]], set[str]]:
    """Parse one ``required`` value into (any-of sets, forbidden traits).

    ``A,B,!C`` gives ``([{"A"}, {"B"}], {"C"})``: every set must be
    matched by at least one of its traits, and no forbidden trait may be
    present.  ``in:A,B`` (``allow_any``) gives ``([{"A", "B"}], set())``.
    """
    if value.startswith("in:"):
        if not allow_any:
            raise _bad_traits(
                "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported "
                "since microversion 1.39. Got: %s" % value)
        any_of = {name.strip() for name in value[3:].split(",")}
        if not all(any_of):
            raise _bad_traits(
                "Expected 'required' parameter value of the form: "
                "in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: %s"
                % value)
        if any(name.startswith("!") for name in any_of):
            raise _bad_traits(
                "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not "
                "support forbidden traits. Got: %s" % value)
        return [any_of], set()

    names = [name.strip() for name in value.split(",")]
    # Any number of leading "!" make a trait forbidden: Placement has always
    # accepted "!!A" as "!A" and keeps doing so.
    forbidden = {name.lstrip("!") for name in names if name.startswith("!")}
    if not all(names) or not all(forbidden):
        form = ("HW_CPU_X86_VMX,!CUSTOM_MAGIC" if allow_forbidden
                else "HW_CPU_X86_VMX,CUSTOM_MAGIC")
        raise _bad_traits(
            "Expected 'required' parameter value of the form: %s. "
            "Got an empty trait in: %s" % (form, value))
    if forbidden and not allow_forbidden:
        raise _bad_traits(
            "Expected 'required' parameter value of the form: "
            "HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: %s" % value)
    required = [{name} for name in names if not name.startswith("!")]
    return required, forbidden


def required_traits(values: Sequence[str], version: Version
                    ) -> tuple[list[set[str]], set[str]]:
    """All ``required`` values of a request, as (any-of sets, forbidden).

    Before 1.39 only the last of repeated parameters counts; from 1.39 all
    of them do, each adding its conditions.
    """
    allow_any = version >= ANY_TRAITS_SINCE
    if not allow_any:
        values = list(values)[-1:]
    required: list[set[str]] = []
    forbidden: set[str] = set()
    for value in values:
        more_required, more_forbidden = trait_value(
            value, version >= FORBIDDEN_TRAITS_SINCE, allow_any)
        required += more_required
        forbidden |= more_forbidden
    return required, forbidden


def member_of_value(value: str) -> tuple[set[str], set[str]]:
    """One ``member_of`` value as (any-of aggregates, forbidden aggregates).

    ``<agg>``, ``in:<agg>,<agg>``, ``!<agg>`` or ``!in:<agg>,<agg>``.
    """
    if "," in value and not value.startswith(("in:", "!in:")):
        raise errors.BadRequest(
            "Multiple values for 'member_of' must be prefixed with the "
            "'in:' or '!in:' keyword using the valid microversion. "
            "Got: %s" % value)
    required: list[str] = []
    forbidden: list[str] = []
    if value.startswith("!in:"):
        forbidden = value[4:].split(",")
    elif value.startswith("!"):
        forbidden = [value[1:]]
    elif value.startswith("in:"):
        required = value[3:].split(",")
    else:
        required = [value]
    for agg_uuid in required + forbidden:
        if not uuidutils.is_uuid_like(agg_uuid):
            raise errors.BadRequest(
                "Invalid query string parameters: Expected 'member_of' "
                "parameter to contain valid UUID(s). Got: %s" % agg_uuid)
    return set(required), set(forbidden)


def member_of(values: Sequence[str], version: Version, suffix: str = ""
              ) -> tuple[list[set[str]], set[str]]:
    """All ``member_of<suffix>`` values, as (any-of sets, forbidden).

    Repeating the parameter (1.24) means "member of all of these"; the
    ``!`` forms (1.32) exclude providers in the aggregates.
    """
    if len(values) > 1 and version < MULTIPLE_MEMBER_OF_SINCE:
        raise errors.BadRequest(
            "Multiple member_of%s parameters are not supported" % suffix)
    required: list[set[str]] = []
    forbidden: set[str] = set()
    for value in values:
        any_of, none_of = member_of_value(value)
        if any_of:
            required.append(any_of)
        if none_of:
            if version < FORBIDDEN_AGGREGATES_SINCE:
                raise errors.BadRequest(
                    "Forbidden member_of%s parameters are not supported in "
                    "the specified microversion" % suffix)
            forbidden |= none_of
    return required, forbidden


def in_tree(value: str) -> str:
    """The provider uuid of an ``in_tree`` value."""
    stripped = value.strip()
    if not uuidutils.is_uuid_like(stripped):
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'in_tree' parameter "
            "to be a format of uuid. Got: %s" % value)
    return stripped
