"""``/api/docs`` in real headless Chromium with every request off this server refused:
Swagger UI renders the API's operations under the page's content security policy."""

from __future__ import annotations

import pytest
from tests.server.test_browser import CHROMIUM, base_url, browser

__all__ = ["base_url", "browser"]  # the fixtures, used by name

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's chromium is not installed at /usr/bin/chromium (.ci/run installs it)",
)

pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency")
from playwright.sync_api import Browser, Route, expect  # noqa: E402


def test_the_api_docs_render_with_no_network(browser: Browser, base_url: str) -> None:
    context = browser.new_context(base_url=base_url)
    outside: list[str] = []
    errors: list[str] = []

    def only_here(route: Route) -> None:
        url = route.request.url
        if url.startswith(base_url + "/"):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    context.route("**/*", only_here)
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto("/api/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("skillwire", timeout=15_000)
    expect(
        page.locator(".opblock-summary-path", has_text="/api/jobs/{job_id}").first
    ).to_be_visible()
    assert outside == [], outside
    assert errors == [], errors
    context.close()
