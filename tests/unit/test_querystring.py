"""The query value parsers: what each form gives, and what each refuses."""

from __future__ import annotations

import pytest

from placement import errors, querystring

AGG1 = "7b0e5f2a-6f1e-4c69-9d43-0f6a2b9c1d01"
AGG2 = "7b0e5f2a-6f1e-4c69-9d43-0f6a2b9c1d02"
AGG3 = "7b0e5f2a-6f1e-4c69-9d43-0f6a2b9c1d03"
LATEST = (1, 39)


@pytest.mark.parametrize("value, expected", [
    ("VCPU:2", {"VCPU": 2}),
    ("VCPU:2,MEMORY_MB:1024,DISK_GB:50",
     {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 50}),
    # The last amount of a repeated class wins.
    ("VCPU:2,VCPU:3", {"VCPU": 3}),
    # Names are not checked here; the database decides.
    ("CUSTOM_X:1", {"CUSTOM_X": 1}),
])
def test_resources(value: str, expected: dict[str, int]) -> None:
    assert querystring.resources(value) == expected


@pytest.mark.parametrize("value, message", [
    ("", "Badly formed resources parameter. Expected resources query string "
         "parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. "
         "Got: empty string."),
    ("  ", "Got: empty string."),
    ("VCPU", "?resources=VCPU:2,MEMORY_MB:1024. Got: VCPU."),
    ("VCPU:1:2", "Got: VCPU:1:2."),
    ("VCPU:2,", "Got: ."),
    ("VCPU:two", "Requested resource VCPU expected positive integer amount. "
                 "Got: two."),
    ("VCPU:", "Requested resource VCPU expected positive integer amount. "
              "Got: ."),
    ("VCPU:0", "Requested resource VCPU requires amount >= 1. Got: 0."),
    ("VCPU:-3", "Requested resource VCPU requires amount >= 1. Got: -3."),
])
def test_resources_refused(value: str, message: str) -> None:
    with pytest.raises(errors.BadRequest) as caught:
        querystring.resources(value)
    assert message in caught.value.detail
    assert caught.value.code == errors.DEFAULT


@pytest.mark.parametrize("value, allow_forbidden, allow_any, expected", [
    ("A", False, False, ([{"A"}], set())),
    ("A,B", False, False, ([{"A"}, {"B"}], set())),
    (" A , B ", False, False, ([{"A"}, {"B"}], set())),
    ("A,!B", True, False, ([{"A"}], {"B"})),
    ("!A,!B", True, False, ([], {"A", "B"})),
    # Extra exclamation marks are tolerated, as Placement always has.
    ("!!A", True, False, ([], {"A"})),
    ("in:A,B", False, True, ([{"A", "B"}], set())),
    ("in: A ,B", False, True, ([{"A", "B"}], set())),
    ("in:A", True, True, ([{"A"}], set())),
])
def test_trait_value(value: str, allow_forbidden: bool, allow_any: bool,
                     expected: tuple[list[set[str]], set[str]]) -> None:
    assert querystring.trait_value(value, allow_forbidden, allow_any) == expected


@pytest.mark.parametrize("value, allow_forbidden, allow_any, message", [
    ("", True, True,
     "Invalid query string parameters: Expected 'required' parameter value "
     "of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: "),
    ("", False, False,
     "Expected 'required' parameter value of the form: "
     "HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: "),
    ("A,,B", True, False, "Got an empty trait in: A,,B"),
    ("A,!", True, False, "Got an empty trait in: A,!"),
    ("!A", False, False,
     "Invalid query string parameters: Expected 'required' parameter value "
     "of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !A"),
    ("in:A,B", True, False,
     "Invalid query string parameters: The format "
     "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion "
     "1.39. Got: in:A,B"),
    ("in:A,,B", True, True,
     "Expected 'required' parameter value of the form: "
     "in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: in:A,,B"),
    ("in:", True, True, "Got an empty trait in: in:"),
    ("in:A,!B", True, True,
     "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support "
     "forbidden traits. Got: in:A,!B"),
])
def test_trait_value_refused(value: str, allow_forbidden: bool, allow_any: bool,
                             message: str) -> None:
    with pytest.raises(errors.BadRequest) as caught:
        querystring.trait_value(value, allow_forbidden, allow_any)
    assert message in caught.value.detail


@pytest.mark.parametrize("values, version, expected", [
    (["A,B"], (1, 18), ([{"A"}, {"B"}], set())),
    # Before 1.39 only the last of repeated parameters counts.
    (["A", "B"], (1, 38), ([{"B"}], set())),
    (["A", "B"], LATEST, ([{"A"}, {"B"}], set())),
    (["in:A,B", "C,!D", "!E"], LATEST, ([{"A", "B"}, {"C"}], {"D", "E"})),
    (["A,!B"], (1, 22), ([{"A"}], {"B"})),
    ([], LATEST, ([], set())),
])
def test_required_traits(values: list[str], version: tuple[int, int],
                         expected: tuple[list[set[str]], set[str]]) -> None:
    assert querystring.required_traits(values, version) == expected


@pytest.mark.parametrize("values, version", [
    (["A,!B"], (1, 21)),
    (["in:A,B"], (1, 38)),
    # An earlier, ignored, value is not even parsed before 1.39.
    (["in:A,B", "!C"], (1, 21)),
])
def test_required_traits_refused(values: list[str], version: tuple[int, int]
                                 ) -> None:
    with pytest.raises(errors.BadRequest):
        querystring.required_traits(values, version)


def test_required_traits_ignores_earlier_values_before_1_39() -> None:
    assert querystring.required_traits(["in:A,B", "C"], (1, 38)) == (
        [{"C"}], set())


@pytest.mark.parametrize("value, expected", [
    (AGG1, ({AGG1}, set())),
    ("in:%s,%s" % (AGG1, AGG2), ({AGG1, AGG2}, set())),
    ("in:" + AGG1, ({AGG1}, set())),
    ("!" + AGG1, (set(), {AGG1})),
    ("!in:%s,%s" % (AGG1, AGG2), (set(), {AGG1, AGG2})),
    # oslo's notion of a uuid: no dashes is fine too.
    (AGG1.replace("-", ""), ({AGG1.replace("-", "")}, set())),
])
def test_member_of_value(value: str, expected: tuple[set[str], set[str]]) -> None:
    assert querystring.member_of_value(value) == expected


@pytest.mark.parametrize("value, message", [
    ("%s,%s" % (AGG1, AGG2),
     "Multiple values for 'member_of' must be prefixed with the 'in:' or "
     "'!in:' keyword using the valid microversion. Got: %s,%s" % (AGG1, AGG2)),
    ("!%s,%s" % (AGG1, AGG2), "must be prefixed with the 'in:' or '!in:'"),
    ("not-a-uuid",
     "Invalid query string parameters: Expected 'member_of' parameter to "
     "contain valid UUID(s). Got: not-a-uuid"),
    ("in:%s,bogus" % AGG1, "contain valid UUID(s). Got: bogus"),
    ("in:", "contain valid UUID(s). Got: "),
    ("!", "contain valid UUID(s). Got: "),
    ("", "contain valid UUID(s). Got: "),
])
def test_member_of_value_refused(value: str, message: str) -> None:
    with pytest.raises(errors.BadRequest) as caught:
        querystring.member_of_value(value)
    assert message in caught.value.detail
    assert caught.value.code == errors.DEFAULT


@pytest.mark.parametrize("values, version, expected", [
    ([AGG1], (1, 3), ([{AGG1}], set())),
    (["in:%s,%s" % (AGG1, AGG2)], (1, 3), ([{AGG1, AGG2}], set())),
    ([AGG1, "in:%s,%s" % (AGG2, AGG3)], (1, 24), ([{AGG1}, {AGG2, AGG3}], set())),
    ([AGG1, "!" + AGG2, "!in:" + AGG3], (1, 32), ([{AGG1}], {AGG2, AGG3})),
    ([], (1, 3), ([], set())),
])
def test_member_of(values: list[str], version: tuple[int, int],
                   expected: tuple[list[set[str]], set[str]]) -> None:
    assert querystring.member_of(values, version) == expected


@pytest.mark.parametrize("values, version, suffix, message", [
    ([AGG1, AGG2], (1, 23), "",
     "Multiple member_of parameters are not supported"),
    ([AGG1, AGG2], (1, 23), "1",
     "Multiple member_of1 parameters are not supported"),
    (["!" + AGG1], (1, 31), "",
     "Forbidden member_of parameters are not supported in the specified "
     "microversion"),
    (["!in:%s,%s" % (AGG1, AGG2)], (1, 31), "_X",
     "Forbidden member_of_X parameters are not supported"),
])
def test_member_of_refused(values: list[str], version: tuple[int, int],
                           suffix: str, message: str) -> None:
    with pytest.raises(errors.BadRequest) as caught:
        querystring.member_of(values, version, suffix)
    assert message in caught.value.detail


@pytest.mark.parametrize("value, expected", [
    (AGG1, AGG1),
    (" %s " % AGG1, AGG1),
])
def test_in_tree(value: str, expected: str) -> None:
    assert querystring.in_tree(value) == expected


@pytest.mark.parametrize("value", ["", "tree", AGG1 + "0"])
def test_in_tree_refused(value: str) -> None:
    with pytest.raises(errors.BadRequest) as caught:
        querystring.in_tree(value)
    assert caught.value.detail == (
        "Invalid query string parameters: Expected 'in_tree' parameter to be "
        "a format of uuid. Got: %s" % value)
