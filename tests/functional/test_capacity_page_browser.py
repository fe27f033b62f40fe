"""The capacity page in a real browser: Debian's chromium, headless,
driven by playwright (with the system chromium: no browser is downloaded).

A live server (gunicorn, SQLite, ``[metrics] enabled``) is filled with a
known cloud; the page is loaded at a phone's size, the figures it shows
are read back from the rendered page, both forms are used, and a
full-page screenshot is written to ``test-artefacts/capacity-page.png``
(or ``$PLACEMENT_TEST_ARTEFACTS``) for CI to keep.  A browser missing
skips the test on a developer's machine and fails it in CI (``.ci/run``
installs chromium).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.functional import live_server

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
AGGREGATE = "b7a5e700-0000-4000-8000-0000000000a1"
# name -> (VCPU total, ratio, MEMORY_MB total, VCPU used, MEMORY_MB used)
HOSTS = {
    "rack1-cn1": (16, 4.0, 65536, 40, 32768),
    "rack1-cn2": (16, 4.0, 65536, 8, 8192),
    "rack2-cn3": (32, 2.0, 131072, 60, 120000),
}


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    reason = None
    if found is None:
        reason = "Debian's chromium is not installed (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "the playwright package is not installed"
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(reason + " (CI must run the browser test)")
        pytest.skip(reason)
    assert found is not None
    return found


def _ok(client: live_server.Client, method: str, path: str, body: Any) -> Any:
    status, answer = client.request(method, path, body)
    assert status < 300, (method, path, status, answer)
    return answer


def _fill(client: live_server.Client) -> None:
    for name, (vcpu, ratio, memory, vcpu_used, memory_used) in HOSTS.items():
        provider = str(uuid.uuid4())
        _ok(client, "POST", "/resource_providers", {"name": name, "uuid": provider})
        _ok(client, "PUT", "/resource_providers/%s/inventories" % provider,
            {"resource_provider_generation": 0, "inventories": {
                "VCPU": {"total": vcpu, "allocation_ratio": ratio},
                "MEMORY_MB": {"total": memory}}})
        if name.startswith("rack1"):
            _ok(client, "PUT", "/resource_providers/%s/aggregates" % provider,
                {"resource_provider_generation": 1, "aggregates": [AGGREGATE]})
        _ok(client, "PUT", "/allocations/%s" % uuid.uuid4(),
            {"allocations": {provider: {"resources": {
                "VCPU": vcpu_used, "MEMORY_MB": memory_used}}},
             "project_id": "p", "user_id": "u", "consumer_generation": None,
             "consumer_type": "INSTANCE"})


def _artefacts() -> Path:
    directory = Path(os.environ.get("PLACEMENT_TEST_ARTEFACTS", REPO / "test-artefacts"))
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def test_the_capacity_page_in_chromium(tmp_path: Path) -> None:
    chromium = _chromium()
    from playwright.sync_api import sync_playwright

    conf = tmp_path / "placement.conf"
    conf.write_text("[metrics]\ncapacity_requests = medium:resources=VCPU:4,"
                    "MEMORY_MB:8192\n")
    env = {"OS_METRICS__ENABLED": "true", "OS_METRICS__CAPACITY_INTERVAL": "0",
           "OS_PLACEMENT_CONFIG_FILES": str(conf)}
    with live_server.serve("sqlite", env=env) as client:
        _fill(client)
        with sync_playwright() as driver:
            browser = driver.chromium.launch(
                executable_path=chromium, headless=True,
                args=["--no-sandbox", "--disable-gpu"])
            try:
                # A phone: 390 CSS pixels wide.
                page = browser.new_context(
                    viewport={"width": 390, "height": 844}, device_scale_factor=2,
                    extra_http_headers={"x-auth-token": "admin"}).new_page()
                fetched_elsewhere: list[str] = []
                page.on("request", lambda request: None if request.url.startswith(
                    client.url) else fetched_elsewhere.append(request.url))
                page.goto(client.url + "/capacity?resources=VCPU:2,MEMORY_MB:4096")
                assert page.title() == "Placement capacity"

                def shown(test_id: str, part: str) -> str:
                    return page.locator('[data-testid="%s"] .%s' % (test_id, part)
                                        ).inner_text()

                # VCPU: capacity 16*4 + 16*4 + 32*2 = 192, used 108.
                assert shown("cloud:VCPU", "capacity") == "192"
                assert shown("cloud:VCPU", "used") == "108"
                assert shown("cloud:VCPU", "free") == "84"
                assert shown("cloud:MEMORY_MB", "capacity") == "262,144"
                assert shown("cloud:MEMORY_MB", "used") == "160,960"
                assert shown("aggregate:%s:VCPU" % AGGREGATE, "used") == "48"
                # VCPU:2,MEMORY_MB:4096: cn1 min(12, 8) + cn2 min(28, 14)
                # + cn3 min(2, 2).
                assert page.locator("#fits").inner_text() == "24"
                # medium, VCPU:4,MEMORY_MB:8192: 4 + 7 + 1.
                assert page.locator('[data-testid="flavor:medium"] .fits-count'
                                    ).inner_text() == "12"
                page.screenshot(path=str(_artefacts() / "capacity-page.png"),
                                full_page=True)
                # The fullest host comes first: rack2-cn3, MEMORY_MB 92%.
                assert page.locator("#hosts h3").first.inner_text().startswith("rack2-cn3")
                # Nothing is wider than the phone.
                assert page.evaluate("document.documentElement.scrollWidth") <= 390

                page.fill('input[name="provider"]', "cn2")
                page.click('form:has(input[name="provider"]) button')
                page.wait_for_selector("#trees")
                assert page.locator("#trees strong").first.inner_text() == "rack1-cn2"
                assert shown("tree:rack1-cn2:VCPU", "used") == "8"
                page.screenshot(path=str(_artefacts() / "capacity-page-search.png"),
                                full_page=True)
                assert fetched_elsewhere == []
            finally:
                browser.close()
