"""Parsing the query of GET /allocation_candidates into request groups."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from placement import errors, request_groups
from placement.query import RequestGroup

AGG1 = "11111111-1111-4111-8111-111111111111"
AGG2 = "22222222-2222-4222-8222-222222222222"
LATEST = (1, 39)


def parse(query: str, version: tuple[int, int] = LATEST
          ) -> request_groups.CandidateQuery:
    return request_groups.parse(parse_qsl(query, keep_blank_values=True), version)


def group(suffix: str = "", **fields: object) -> RequestGroup:
    return RequestGroup(suffix=suffix, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("query, version, expected", [
    ("resources=VCPU:1", (1, 10),
     [group(resources=(("VCPU", 1),))]),
    # A class named twice keeps its last amount; a repeated key its last value.
    ("resources=VCPU:1,VCPU:2", LATEST, [group(resources=(("VCPU", 2),))]),
    ("resources=VCPU:1&resources=DISK_GB:3", LATEST,
     [group(resources=(("DISK_GB", 3),))]),
    ("resources=VCPU:1&required=A,!B", LATEST,
     [group(resources=(("VCPU", 1),), required=(frozenset({"A"}),),
            forbidden=frozenset({"B"}))]),
    # Before 1.39 only the last required counts; from 1.39 all of them.
    ("resources=VCPU:1&required=A&required=B", (1, 38),
     [group(resources=(("VCPU", 1),), required=(frozenset({"B"}),))]),
    ("resources=VCPU:1&required=A&required=in:B,C", LATEST,
     [group(resources=(("VCPU", 1),),
            required=(frozenset({"A"}), frozenset({"B", "C"})))]),
    ("resources=VCPU:1&member_of=%s&member_of=!%s" % (AGG1, AGG2), LATEST,
     [group(resources=(("VCPU", 1),), member_of=(frozenset({AGG1}),),
            not_member_of=frozenset({AGG2}))]),
    ("resources=VCPU:1&member_of=in:%s,%s" % (AGG1, AGG2), LATEST,
     [group(resources=(("VCPU", 1),), member_of=(frozenset({AGG1, AGG2}),))]),
    # Unnumbered group first, then suffixes in sorted order.
    ("resources_B=VCPU:1&resources=DISK_GB:1&resources1=VGPU:1"
     "&group_policy=none", LATEST,
     [group(resources=(("DISK_GB", 1),)), group("1", resources=(("VGPU", 1),)),
      group("_B", resources=(("VCPU", 1),))]),
    ("resources1=VCPU:1&in_tree1=%s" % AGG1, LATEST,
     [group("1", resources=(("VCPU", 1),), in_tree=AGG1)]),
    # A resourceless group named in same_subtree (1.36).
    ("resources1=VCPU:1&required2=A&group_policy=none&same_subtree=1,2", LATEST,
     [group("1", resources=(("VCPU", 1),)),
      group("2", required=(frozenset({"A"}),))]),
])
def test_groups(query: str, version: tuple[int, int],
                expected: list[RequestGroup]) -> None:
    assert list(parse(query, version).groups) == expected


def test_request_wide_parameters() -> None:
    parsed = parse("resources1=VCPU:1&resources2=VGPU:1&group_policy=isolate"
                   "&limit=3&root_required=A,!B&same_subtree=1,2"
                   "&same_subtree=2,1,2")
    assert parsed.limit == 3
    assert parsed.group_policy == "isolate"
    assert parsed.root_required == frozenset({"A"})
    assert parsed.root_forbidden == frozenset({"B"})
    assert parsed.same_subtree == (("1", "2"), ("2", "1"))
    assert parsed.resource_class_names == ["VCPU", "VGPU"]


@pytest.mark.parametrize("query, version", [
    ("resources=VCPU:1&root_required=A", (1, 34)),
    ("resources=VCPU:1&same_subtree=_X", (1, 35)),
])
def test_parameters_ignored_before_their_version(
        query: str, version: tuple[int, int]) -> None:
    # The schema refuses them; the parser alone does not invent them.
    parsed = parse(query, version)
    assert parsed.root_required == frozenset() and parsed.same_subtree == ()


@pytest.mark.parametrize("query, version, message, code", [
    ("required=A", LATEST,
     "There must be at least one resources or resources[$S] parameter.",
     errors.QUERYPARAM_MISSING_VALUE),
    ("", (1, 35),
     "At least one request group (`resources` or `resources{$S}`) is required.",
     errors.DEFAULT),
    ("resources=", LATEST, "Badly formed resources parameter. Expected "
     "resources query string parameter in form: "
     "?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.", errors.DEFAULT),
    ("resources=VCPU:0", LATEST,
     "Requested resource VCPU requires amount >= 1. Got: 0.", errors.DEFAULT),
    ("resources=VCPU:x", LATEST,
     "Requested resource VCPU expected positive integer amount. Got: x.",
     errors.DEFAULT),
    ("resources=VCPU:1&required=", LATEST,
     "Invalid query string parameters: Expected 'required' parameter value "
     "of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: ",
     errors.DEFAULT),
    ("resources=VCPU:1&required=!A", (1, 21),
     "Invalid query string parameters: Expected 'required' parameter value "
     "of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !A", errors.DEFAULT),
    ("resources=VCPU:1&required=in:A,B", (1, 38),
     "Invalid query string parameters: The format "
     "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion "
     "1.39. Got: in:A,B", errors.DEFAULT),
    ("resources=VCPU:1&member_of=%s&member_of=%s" % (AGG1, AGG2), (1, 23),
     "Multiple member_of parameters are not supported", errors.DEFAULT),
    ("resources=VCPU:1&member_of=!%s" % AGG1, (1, 31),
     "Forbidden member_of parameters are not supported in the specified "
     "microversion", errors.DEFAULT),
    ("resources=VCPU:1&member_of=x", LATEST,
     "Invalid query string parameters: Expected 'member_of' parameter to "
     "contain valid UUID(s). Got: x", errors.DEFAULT),
    ("resources=VCPU:1&in_tree=x", LATEST,
     "Invalid query string parameters: Expected 'in_tree' parameter to be a "
     "format of uuid. Got: x", errors.DEFAULT),
    ("resources1=VCPU:1&resources2=VCPU:1", LATEST,
     'The "group_policy" parameter is required when specifying more than '
     'one "resources{N}" parameter.', errors.DEFAULT),
    ("resources1=VCPU:1&required2=A&group_policy=none", LATEST,
     "Resourceless suffixed group request should be specified in "
     "`same_subtree` query param: bad group(s) - ['2'].",
     errors.QUERYPARAM_BAD_VALUE),
    # Before 1.36 groups without resources are refused outright.
    ("resources1=VCPU:1&required3=A&required2=B&member_of2=%s" % AGG1, (1, 35),
     "All traits parameters must be associated with resources.  Found the "
     "following orphaned traits keys: required3, required2", errors.DEFAULT),
    ("resources1=VCPU:1&member_of2=%s" % AGG1, (1, 35),
     "All member_of parameters must be associated with resources. Found the "
     "following orphaned member_of keys: member_of2", errors.DEFAULT),
    ("resources1=VCPU:1&in_tree2=%s" % AGG1, (1, 35),
     "All request groups must specify resources.", errors.DEFAULT),
    ("required2=A", (1, 35),
     "All traits parameters must be associated with resources.  Found the "
     "following orphaned traits keys: required2", errors.DEFAULT),
    ("resources1=VCPU:1&required=A", LATEST,
     "Resourceless suffixed group request should be specified in "
     "`same_subtree` query param: bad group(s) - [''].",
     errors.QUERYPARAM_BAD_VALUE),
    ("resources_X=VCPU:1&same_subtree=X", LATEST,
     "Real suffixes should be specified in `same_subtree`: ['X'] not found "
     "in ['_X'].", errors.QUERYPARAM_BAD_VALUE),
    ("resources=VCPU:1&same_subtree=1,,2", LATEST,
     "Empty string (unsuffixed group) can not be specified in `same_subtree` ",
     errors.QUERYPARAM_BAD_VALUE),
    ("resources=VCPU:1&required=A,!A", LATEST,
     "Conflicting required and forbidden traits found in the following "
     "traits keys: required: (A)", errors.DEFAULT),
    ("resources1=VCPU:1&required1=A&required1=!A", LATEST,
     "Conflicting required and forbidden traits found in the following "
     "traits keys: required1: (A)", errors.DEFAULT),
    ("resources=VCPU:1&root_required=A,!A,B,!B", LATEST,
     "Conflicting required and forbidden traits found in root_required: A, B",
     errors.QUERYPARAM_BAD_VALUE),
    ("resources=VCPU:1&root_required=A&root_required=B", LATEST,
     "Query parameter 'root_required' may be specified only once.",
     errors.ILLEGAL_DUPLICATE_QUERYPARAM),
    ("resources=VCPU:1&root_required=in:A", LATEST,
     "Invalid query string parameters: The format "
     "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion "
     "1.39. Got: in:A", errors.DEFAULT),
])
def test_errors(query: str, version: tuple[int, int], message: str,
                code: str) -> None:
    with pytest.raises(errors.BadRequest) as caught:
        parse(query, version)
    assert caught.value.detail == message
    assert caught.value.code == code


@pytest.mark.parametrize("query, message", [
    # Amounts are checked before the groups are related to each other ...
    ("resources1=VCPU:1&resources2=VCPU:x",
     "Requested resource VCPU expected positive integer amount. Got: x."),
    # ... resourceless groups before unknown same_subtree suffixes ...
    ("resources1=VCPU:1&required2=A&same_subtree=1,3&group_policy=none",
     "Resourceless suffixed group request should be specified in "
     "`same_subtree` query param: bad group(s) - ['2']."),
    # ... and trait conflicts before a missing group_policy.
    ("resources1=VCPU:1&required1=A,!A&resources2=VCPU:1",
     "Conflicting required and forbidden traits found in the following "
     "traits keys: required1: (A)"),
])
def test_first_error_wins(query: str, message: str) -> None:
    with pytest.raises(errors.BadRequest) as caught:
        parse(query)
    assert caught.value.detail == message


def test_any_of_form_does_not_conflict_with_forbidden() -> None:
    parsed = parse("resources=VCPU:1&required=in:A,B&required=!A")
    assert parsed.groups[0].forbidden == frozenset({"A"})


@pytest.mark.parametrize("query, limit, policy", [
    # Placement uses the first of a repeated limit or group_policy (the
    # schema having checked the last), unlike other keys.
    ("limit=10&limit=1", 10, None),
    ("limit=1&limit=10", 1, None),
    ("group_policy=isolate&group_policy=none", None, "isolate"),
    ("group_policy=none&group_policy=isolate", None, "none"),
])
def test_first_limit_and_group_policy_win(query: str, limit: int | None,
                                          policy: str | None) -> None:
    parsed = parse("resources=VCPU:1&" + query)
    assert (parsed.limit, parsed.group_policy) == (limit, policy)


def test_a_first_limit_that_is_no_number_is_refused() -> None:
    # Placement fails with a 500 here; a 400 says what is wrong.
    with pytest.raises(errors.BadRequest) as caught:
        parse("resources=VCPU:1&limit=x&limit=1")
    assert caught.value.detail == (
        "Invalid query string parameters: 'x' does not match '^[1-9][0-9]*$'")


@pytest.mark.parametrize("value", ["_A ,_B", "_A, _B", " _A,_B ", "_A,_B"])
def test_same_subtree_suffixes_are_stripped(value: str) -> None:
    parsed = parse("resources_A=VCPU:1&required_B=T&group_policy=none"
                   "&same_subtree=" + value.replace(" ", "%20"))
    assert parsed.same_subtree == (("_A", "_B"),)
