"""Property-based fuzzing: no input a client can send gets a 5xx.

Two generators, on SQLite and PostgreSQL, each against a fresh database
holding a provider with an inventory, a trait, a custom class and an
allocation:

* schemathesis, from the service's own OpenAPI document (GET
  /openapi.json): for every operation, requests that fit the document
  (positive) and requests that break it (negative: wrong types, missing
  or unknown members, out-of-range numbers, strings where objects go);
* hypothesis, for what a schema-driven generator does not send: any
  bytes as percent-escapes in paths and queries (NUL, invalid UTF-8,
  surrogates), malformed and out-of-range ``OpenStack-API-Version``
  headers, wrong content types, raw bodies (truncated, deeply nested,
  duplicated keys, huge numbers).

Every answer must be below 500, hold no traceback and no SQL, and every
4xx must be the JSON error of api-ref (``errors[0]`` with status, title,
detail and, from 1.23, a ``code``).  Afterwards the seeded data must be
as it was and the service must still answer.

The run is bounded: ``PLACEMENT_FUZZ_EXAMPLES`` (default 8) examples per
operation and mode for schemathesis, and a hundred times that for each
hypothesis test; with the defaults the whole module takes a minute or two
per backend.  ``PLACEMENT_FUZZ_REPORT`` names a file to which each test
appends its figures (requests tried, 5xx found).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from typing import Any, Iterator

import pytest
import webob
import webob.acceptparse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement import microversion
from placement.routes import ROUTES
from tests.functional import inprocess
from tests.functional.inprocess import send

schemathesis = pytest.importorskip("schemathesis")
from schemathesis.generation import GenerationMode  # noqa: E402

EXAMPLES = int(os.environ.get("PLACEMENT_FUZZ_EXAMPLES", "8"))
BACKENDS = ["sqlite", "postgresql"]

PROVIDER = "2a5d1c3e-7f8a-4b9c-8d0e-1f2a3b4c5d01"
CONSUMER = "2a5d1c3e-7f8a-4b9c-8d0e-1f2a3b4c5d21"
_OTHER = "2a5d1c3e-7f8a-4b9c-8d0e-1f2a3b4c5dff"
ADMIN = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement latest"}

# What must never reach a client: Python's tracebacks and exception
# reprs, and SQL or driver text.
_LEAKS = re.compile(
    r"Traceback \(most recent|File \"/|(?i:sqlalchemy|psycopg|pymysql|sqlite3)"
    r"|\bSELECT\b.{1,200}\bFROM\b|\bINSERT INTO\b|\bUPDATE\b.{1,200}\bSET\b"
    r"|\bDELETE FROM\b")


class Tally:
    def __init__(self, name: str) -> None:
        self.name = name
        self.requests = 0
        self.failures: list[str] = []

    def report(self) -> None:
        path = os.environ.get("PLACEMENT_FUZZ_REPORT")
        if path:
            with open(path, "a") as handle:
                handle.write("%s requests=%d failures=%d\n"
                             % (self.name, self.requests, len(self.failures)))
        assert not self.failures, "\n".join(self.failures[:20])


def check_answer(tally: Tally, request: str, status: int, content_type: str,
                 body: bytes, version: tuple[int, int] | None,
                 json_error: bool = True) -> None:
    """Record a failure unless the answer is one a client may get."""
    tally.requests += 1
    problems = []
    if status >= 500:
        problems.append("status %d" % status)
    text = body.decode("utf-8", "replace")
    if _LEAKS.search(text):
        problems.append("leaks internals")
    if json_error and 400 <= status < 500 and not request.startswith("HEAD "):
        problems.extend(_error_shape_problems(status, content_type, body, version))
    if problems:
        tally.failures.append("%s -> %d %s: %s" % (
            request, status, ", ".join(problems), text[:300]))


def _error_shape_problems(status: int, content_type: str, body: bytes,
                          version: tuple[int, int] | None) -> list[str]:
    if not content_type.startswith("application/json"):
        return ["error is %s, not JSON" % content_type]
    try:
        error = json.loads(body)["errors"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        return ["error body is not {errors: [...]}"]
    missing = [key for key in ("status", "title", "detail") if key not in error]
    if version is not None and version >= (1, 23) and "code" not in error:
        missing.append("code")
    if error.get("status") != status:
        missing.append("matching status")
    return ["error lacks %s" % ", ".join(missing)] if missing else []


def expects_json(accept: str | None) -> bool:
    """Whether a client sending this Accept header must get JSON errors.

    No, an empty or a ``*/*`` Accept means JSON in Placement, and so does
    a well-formed one that ranks ``application/json`` above HTML.  A client
    that prefers another type, or whose header webob cannot parse, gets
    webob's page (api-ref errors.rst): only its status is judged.
    """
    if accept is None or accept.strip() in ("", "*/*"):
        return True
    parsed = webob.acceptparse.create_accept_header(accept)
    if not isinstance(parsed, webob.acceptparse.AcceptValidHeader):
        return False
    offers = parsed.acceptable_offers(["text/html", "application/json"])
    return bool(offers) and offers[0][0] == "application/json"


def _answered_version(headers: Any) -> tuple[int, int] | None:
    value = headers.get("openstack-api-version", "")
    if not value.startswith("placement "):
        return None
    return microversion.parse_version(value.split()[1])


@contextlib.contextmanager
def _service(backend: str) -> Iterator[Any]:
    with inprocess.application(backend) as application:
        _seed(application)
        before = _state(application)
        yield application
        assert send(application, "GET", "/").status_int == 200
        assert _state(application) == before, "the seeded data changed"


def _seed(application: Any) -> None:
    steps = [
        ("POST", "/resource_providers", {"name": "fuzz-seed", "uuid": PROVIDER}),
        ("PUT", "/resource_providers/%s/inventories" % PROVIDER,
         {"resource_provider_generation": 0,
          "inventories": {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 4096}}}),
        ("PUT", "/traits/CUSTOM_FUZZ_SEED", None),
        ("PUT", "/resource_classes/CUSTOM_FUZZ_SEED", None),
        ("PUT", "/allocations/%s" % CONSUMER,
         {"allocations": {PROVIDER: {"resources": {"VCPU": 2}}},
          "project_id": "fuzz-project", "user_id": "fuzz-user",
          "consumer_generation": None, "consumer_type": "INSTANCE"}),
    ]
    for method, path, body in steps:
        resp = send(application, method, path, body)
        assert resp.status_int < 300, (method, path, resp.body)


def _state(application: Any) -> list[Any]:
    return [json.loads(send(application, "GET", path).body) for path in (
        "/resource_providers/%s" % PROVIDER,
        "/resource_providers/%s/inventories" % PROVIDER,
        "/resource_providers/%s/usages" % PROVIDER,
        "/allocations/%s" % CONSUMER,
        "/traits?name=in:CUSTOM_FUZZ_SEED",
        "/resource_classes/CUSTOM_FUZZ_SEED")]


_SETTINGS = dict(deadline=None, database=None, derandomize=False,
                 suppress_health_check=list(HealthCheck), print_blob=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_schemathesis_finds_no_5xx(backend: str) -> None:
    tally = Tally("schemathesis %s" % backend)
    with _service(backend) as application:
        schema = schemathesis.openapi.from_wsgi("/openapi.json", application)
        for result in schema.get_all_operations():
            operation = result.ok()
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

                @settings(max_examples=EXAMPLES, **_SETTINGS)
                @given(case=operation.as_strategy(generation_mode=mode))
                def run(case: Any) -> None:
                    headers = dict(case.headers or {})
                    for name, value in ADMIN.items():
                        headers.setdefault(name, value)
                    case.headers = headers
                    resp = case.call()
                    # schemathesis gives each header as a list of values;
                    # its transport adds an Accept of its own unless the
                    # case sets one (a negative case may).
                    answered = {name.lower(): values[0]
                                for name, values in resp.headers.items()}
                    accept = resp.request.headers.get("Accept")
                    check_answer(
                        tally, "%s %s (Accept %r)" % (
                            case.method, case.formatted_path, accept),
                        resp.status_code, answered.get("content-type", ""),
                        resp.content, _answered_version(answered),
                        json_error=expects_json(accept))

                run()
    tally.report()


# What a schema-driven generator does not send.

_ROUTE_PATHS = sorted({route.path for route in ROUTES})
_METHODS = ["GET", "PUT", "POST", "DELETE", "PATCH", "HEAD", "OPTIONS"]
_SEGMENT_TEXT = st.one_of(
    st.sampled_from([PROVIDER, CONSUMER, "VCPU", "CUSTOM_FUZZ_SEED",
                     "", "%00", "%FF%FE", "%ED%A0%80", "%C0%AF", "..", "%2F"]),
    st.binary(max_size=12).map(lambda raw: "".join("%%%02X" % b for b in raw)),
    st.text(max_size=12).map(
        lambda text: "".join("%%%02X" % b for b in text.encode(
            "utf-8", "surrogatepass"))),
)
_NUMBERS = st.sampled_from(["0", "-1", "1", "2147483648", "9223372036854775808",
                            "1e309", "NaN", "1.5", "9" * 40, "-0", "0x10"])
_QUERY_VALUES = st.one_of(_NUMBERS, _SEGMENT_TEXT, st.sampled_from([
    "VCPU:1", "VCPU:1,MEMORY_MB:" + "9" * 31, "in:" + PROVIDER, "!CUSTOM_X",
    "in:", ",", "VCPU", "CUSTOM_FUZZ_SEED", "isolate", "true"]))
_QUERY_KEYS = st.sampled_from([
    "name", "uuid", "member_of", "resources", "in_tree", "required", "limit",
    "group_policy", "root_required", "same_subtree", "resources1", "required_x",
    "project_id", "user_id", "consumer_type", "associated", "%FF", "%00", ""])
_VERSIONS = st.one_of(
    st.sampled_from(["placement latest", "placement 1.0", "placement 1.39",
                     "placement 1.40", "placement 2.0", "placement 0.9",
                     "placement 1.", "placement 1.2.3", "placement -1.1",
                     "placement 1.99999999999999999999", "placement",
                     "compute 1.5", "placement 1.5, placement 1.6", "",
                     "placement\x001.1", "placement LATEST"]),
    st.tuples(st.integers(-2, 3), st.integers(-1, 2 ** 64)).map(
        lambda v: "placement %d.%d" % v),
)
_CONTENT_TYPES = st.sampled_from([
    "application/json", "application/json; charset=utf-8", "text/plain",
    "application/x-www-form-urlencoded", "", "application/json; charset=latin-1",
    "application/jsonx", "*/*", "multipart/form-data; boundary=x"])


def _nested(depth: int) -> bytes:
    return b'{"name": ' + b"[" * depth + b"]" * depth + b"}"


_BODIES = st.one_of(
    st.none(),
    st.binary(max_size=64),
    st.sampled_from([
        b"", b"{", b"null", b"[]", b'"x"', b"1e999", b"{}", b'{"name": "a"',
        b'{"name": "dup", "name": "dup2"}', b'{"name": "\\u0000"}',
        b'{"name": "\\ud800"}', b'{"name": "\xed\xa0\x80"}', b"\xff\xfe{",
        b'{"resource_provider_generation": 99999999999999999999999, '
        b'"inventories": {"VCPU": {"total": 1e308}}}',
        b'{"allocations": {"%s": {"resources": {"VCPU": -1}}}}' % PROVIDER.encode(),
        _nested(500), _nested(990), _nested(20000),
    ]),
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                  st.text(max_size=8)),
        lambda children: st.one_of(st.lists(children, max_size=3),
                                   st.dictionaries(st.text(max_size=8), children,
                                                   max_size=3)),
        max_leaves=12).map(lambda value: json.dumps(value).encode()),
)


@st.composite
def raw_requests(draw: Any) -> webob.Request:
    template = draw(st.sampled_from(_ROUTE_PATHS))
    path = re.sub(r"{\w+}", lambda _m: draw(_SEGMENT_TEXT), template)
    method = draw(st.sampled_from(_METHODS))
    if method not in ("GET", "HEAD"):
        # The seeded things are there to be read; a well-formed write to
        # them (deleting the seeded consumer's allocations) would be right
        # to change them.
        for seeded in (PROVIDER, CONSUMER, "CUSTOM_FUZZ_SEED"):
            path = path.replace(seeded, _OTHER)
    pairs = draw(st.lists(st.tuples(_QUERY_KEYS, _QUERY_VALUES), max_size=4))
    query = "&".join("%s=%s" % pair for pair in pairs)
    req = webob.Request.blank(path + ("?" + query if query else ""), method=method)
    req.headers["X-Auth-Token"] = draw(st.sampled_from(["admin", "admin", "", "x" * 300]))
    version = draw(st.one_of(st.none(), _VERSIONS))
    if version is not None:
        req.headers["OpenStack-API-Version"] = version
    body = draw(_BODIES)
    if body is not None:
        req.body = body
        content_type = draw(_CONTENT_TYPES)
        if content_type:
            req.headers["Content-Type"] = content_type
    accept = draw(st.sampled_from([None, "application/json", "*/*", "text/plain;q=0.1",
                                   "application/json;q=x", ""]))
    if accept is not None:
        req.headers["Accept"] = accept
    return req


@pytest.mark.parametrize("backend", BACKENDS)
def test_hypothesis_raw_requests_find_no_5xx(backend: str) -> None:
    tally = Tally("hypothesis %s" % backend)
    with _service(backend) as application:

        @settings(max_examples=EXAMPLES * 100, **_SETTINGS)
        @given(req=raw_requests())
        def run(req: webob.Request) -> None:
            # From the environ: webob's own accessors decode as UTF-8.
            shown = "%s %r %r %r (Accept %r)" % (
                req.method, req.environ["PATH_INFO"], req.environ["QUERY_STRING"],
                req.body[:80], req.headers.get("Accept"))
            accept = req.headers.get("Accept")
            resp = req.get_response(application)
            check_answer(tally, shown, resp.status_int, resp.content_type or "",
                         resp.body, _answered_version(resp.headers),
                         json_error=expects_json(accept))

        run()
    tally.report()
