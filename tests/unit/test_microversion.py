"""Microversion table, parsing and header negotiation."""

from __future__ import annotations

import pytest

from placement import errors, microversion


def _negotiate(value: str | None) -> tuple[int, int]:
    headers = {} if value is None else {"OpenStack-API-Version": value}
    return microversion.negotiate(headers)


def test_versions_run_from_1_0_to_1_39_without_gaps() -> None:
    versions = [version for version, _ in microversion.VERSIONS]
    assert versions == [(1, minor) for minor in range(0, 40)]
    assert microversion.MIN_VERSION == (1, 0)
    assert microversion.MAX_VERSION == (1, 39)


def test_every_version_says_what_it_changed() -> None:
    for version, change in microversion.VERSIONS:
        assert change.strip(), version


@pytest.mark.parametrize("text, expected", [
    ("1.0", (1, 0)),
    ("1.9", (1, 9)),
    ("1.10", (1, 10)),
    ("1.39", (1, 39)),
    ("2.0", (2, 0)),
    ("latest", (1, 39)),
])
def test_parse_version(text: str, expected: tuple[int, int]) -> None:
    assert microversion.parse_version(text) == expected


@pytest.mark.parametrize("text", [
    "", "1", "1.", ".1", "1.a", "a.1", "1.2.3", "1,2", " ", "LATEST",
])
def test_parse_version_rejects_malformed(text: str) -> None:
    with pytest.raises(errors.BadRequest) as info:
        microversion.parse_version(text)
    assert info.value.status == 400
    assert info.value.detail.startswith(
        "Invalid microversion: invalid version string: %s; " % text)


def test_versions_compare_numerically_not_as_text() -> None:
    # "1.10" sorts before "1.9" as text; as tuples it is newer.
    assert microversion.parse_version("1.10") > microversion.parse_version("1.9")


def test_no_header_means_the_minimum() -> None:
    assert _negotiate(None) == (1, 0)


@pytest.mark.parametrize("value, expected", [
    ("placement 1.0", (1, 0)),
    ("placement 1.14", (1, 14)),
    ("placement 1.39", (1, 39)),
    ("placement latest", (1, 39)),
    ("PLACEMENT 1.20", (1, 20)),
    ("compute 2.1", (1, 0)),
    ("compute 2.1, placement 1.25", (1, 25)),
])
def test_negotiate(value: str, expected: tuple[int, int]) -> None:
    assert _negotiate(value) == expected


@pytest.mark.parametrize("value, detail", [
    ("placement 1.a", "invalid version string: 1.a; invalid literal for int() "
                      "with base 10: 'a'"),
    ("placement 1.1.1", "invalid version string: 1.1.1; invalid literal for int() "
                        "with base 10: '1.1'"),
    ("placement LATEST", "invalid version string: LATEST; invalid literal for int() "
                         "with base 10: 'LATEST'"),
    ("placement 1", "invalid version string: 1; Version.__new__() missing 1 "
                    "required positional argument: 'minor'"),
])
def test_negotiate_malformed_is_400(value: str, detail: str) -> None:
    # Word for word as Placement (through microversion-parse) says it.
    with pytest.raises(errors.BadRequest) as info:
        _negotiate(value)
    assert info.value.detail == "Invalid microversion: " + detail


def test_leading_zeros_and_spaces_are_tolerated() -> None:
    assert _negotiate("placement 01.02") == (1, 2)
    assert _negotiate("placement  1.2") == (1, 2)


@pytest.mark.parametrize("value", ["placement 1.40", "placement 0.9", "placement 2.0",
                                   "placement 1.999", "placement -1.2"])
def test_negotiate_out_of_range_is_406_naming_the_bounds(value: str) -> None:
    with pytest.raises(errors.NotAcceptable) as info:
        _negotiate(value)
    exc = info.value
    assert exc.status == 406
    assert exc.detail == "Invalid microversion: Unacceptable version header: %s" % (
        value.split()[1])
    assert exc.extra == {"min_version": "1.0", "max_version": "1.39"}


def test_format_version() -> None:
    assert microversion.format_version((1, 7)) == "1.7"
    assert microversion.format_version((1, 39)) == "1.39"


def test_response_headers() -> None:
    assert microversion.response_headers((1, 23)) == {
        "openstack-api-version": "placement 1.23",
        "vary": "openstack-api-version",
    }


def test_history_page_describes_every_version() -> None:
    # api-ref/source/history.rst has one section per version, in order.
    from pathlib import Path

    page = Path(__file__).parents[2] / "api-ref" / "source" / "history.rst"
    lines = page.read_text().splitlines()
    titles = [line for line, under in zip(lines, lines[1:], strict=False)
              if under and set(under) == {"="} and line[:1].isdigit()]
    assert titles == [microversion.format_version(v) for v, _ in microversion.VERSIONS]
