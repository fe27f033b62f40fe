"""The error classes, codes and the one error body formatter."""

from __future__ import annotations

import json

import pytest

from placement import errors


def _codes() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(errors).items()
        if name.isupper() and isinstance(value, str)
    }


def test_error_codes_are_unique_placement_codes() -> None:
    codes = _codes()
    assert codes["DEFAULT"] == "placement.undefined_code"
    for name, value in codes.items():
        assert value.startswith("placement."), name
    values = list(codes.values())
    assert len(values) == len(set(values)), "two symbols share one code"


@pytest.mark.parametrize("symbol, value", [
    ("CONCURRENT_UPDATE", "placement.concurrent_update"),
    ("DUPLICATE_NAME", "placement.duplicate_name"),
    ("INVENTORY_INUSE", "placement.inventory.inuse"),
    ("PROVIDER_IN_USE", "placement.resource_provider.inuse"),
    ("PROVIDER_CANNOT_DELETE_PARENT",
     "placement.resource_provider.cannot_delete_parent"),
    ("RESOURCE_PROVIDER_NOT_FOUND", "placement.resource_provider.not_found"),
    ("ILLEGAL_DUPLICATE_QUERYPARAM", "placement.query.duplicate_key"),
    ("QUERYPARAM_BAD_VALUE", "placement.query.bad_value"),
    ("QUERYPARAM_MISSING_VALUE", "placement.query.missing_value"),
])
def test_public_code_strings(symbol: str, value: str) -> None:
    # These strings are matched by clients (nova among them): they never change.
    assert getattr(errors, symbol) == value


@pytest.mark.parametrize("cls, status, title", [
    (errors.BadRequest, 400, "Bad Request"),
    (errors.Unauthorized, 401, "Unauthorized"),
    (errors.Forbidden, 403, "Forbidden"),
    (errors.NotFound, 404, "Not Found"),
    (errors.NotAcceptable, 406, "Not Acceptable"),
    (errors.Conflict, 409, "Conflict"),
    (errors.RequestEntityTooLarge, 413, "Request Entity Too Large"),
    (errors.UnsupportedMediaType, 415, "Unsupported Media Type"),
    (errors.InternalServerError, 500, "Internal Server Error"),
    (errors.ServiceUnavailable, 503, "Service Unavailable"),
])
def test_error_classes(cls: type[errors.ApiError], status: int, title: str) -> None:
    exc = cls("something is wrong")
    assert (exc.status, exc.title, exc.detail) == (status, title, "something is wrong")
    assert exc.code == errors.DEFAULT
    assert isinstance(exc, errors.ApiError)


def test_error_keeps_code_headers_and_extra() -> None:
    exc = errors.Conflict("busy", code=errors.CONCURRENT_UPDATE,
                          headers={"Retry-After": "1"}, extra={"x": 1})
    assert exc.code == "placement.concurrent_update"
    assert exc.headers == {"Retry-After": "1"}
    assert exc.extra == {"x": 1}


def test_method_not_allowed_lists_allow() -> None:
    exc = errors.MethodNotAllowed(["GET", "POST"])
    assert exc.status == 405
    assert exc.headers == {"allow": "GET, POST"}


def test_full_detail_puts_the_stock_explanation_first() -> None:
    text = errors.full_detail(404, "No resource provider with uuid x found")
    assert text == (
        "The resource could not be found.\n\n"
        " No resource provider with uuid x found  "
    )


def test_full_detail_of_unknown_status_has_no_explanation() -> None:
    assert errors.full_detail(599, "odd") == "\n\n odd  "


def _render(**kwargs: object) -> dict:
    args: dict = {"status": 409, "title": "Conflict", "detail": "taken",
                  "request_id": "req-1"}
    args.update(kwargs)
    body = json.loads(errors.render(**args))
    assert list(body) == ["errors"]
    assert len(body["errors"]) == 1
    return body["errors"][0]


def test_render_before_1_23_has_no_code() -> None:
    error = _render(code=errors.DUPLICATE_NAME, version=(1, 22))
    assert set(error) == {"status", "title", "detail", "request_id"}
    assert error["status"] == 409
    assert error["title"] == "Conflict"
    assert error["request_id"] == "req-1"
    assert error["detail"].endswith(" taken  ")


def test_render_from_1_23_has_the_code() -> None:
    error = _render(code=errors.DUPLICATE_NAME, version=(1, 23))
    assert error["code"] == "placement.duplicate_name"
    error = _render(version=(1, 39))
    assert error["code"] == "placement.undefined_code"


def test_render_without_a_version_has_no_code() -> None:
    # Errors raised before negotiation (a malformed version header).
    assert "code" not in _render(version=None)


def test_render_merges_extra_members() -> None:
    error = _render(status=406, title="Not Acceptable", version=None,
                    extra={"min_version": "1.0", "max_version": "1.39"})
    assert error["min_version"] == "1.0"
    assert error["max_version"] == "1.39"


def test_full_detail_of_405_names_the_method() -> None:
    text = errors.full_detail(405, "The method specified is not allowed for this resource.",
                              {"REQUEST_METHOD": "PATCH"})
    assert text == ("The method PATCH is not allowed for this resource. \n\n"
                    " The method specified is not allowed for this resource.")


def test_full_detail_of_415_names_the_media_type() -> None:
    text = errors.full_detail(415, "use json", {"CONTENT_TYPE": "text/plain"})
    assert text == ("The request media type text/plain is not supported by this server. "
                    "\n\n use json")


@pytest.mark.parametrize("accept, shown", [
    (None, "application/json"), ("*/*", "application/json"), ("text/plain", "text/plain"),
])
def test_full_detail_of_406_names_the_accepted_type(accept: str | None, shown: str) -> None:
    environ = {} if accept is None else {"HTTP_ACCEPT": accept}
    text = errors.full_detail(406, "Only application/json is provided", environ)
    assert text == ("The resource could not be generated that was acceptable to your "
                    "browser (content of type %s. \n\n Only application/json is provided"
                    % shown)


def test_full_detail_with_no_specific_message() -> None:
    assert errors.full_detail(404, "") == "The resource could not be found.\n\n   "


def test_method_not_allowed_detail_can_be_empty() -> None:
    exc = errors.MethodNotAllowed(["GET"], detail="")
    assert exc.detail == ""
    assert exc.headers == {"allow": "GET"}


def test_code_is_written_before_the_request_id() -> None:
    # Placement's error objects list the code before the request id; some
    # clients compare bodies as text.
    from placement import errors as placement_errors

    body = placement_errors.render(404, "Not Found", "gone", "req-1",
                                   version=(1, 23)).decode()
    assert body.index('"code"') < body.index('"request_id"')
