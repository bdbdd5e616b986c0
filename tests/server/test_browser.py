"""The refund flow clicked through the page in real headless Chromium (Debian's, driven by
Playwright; no browser is downloaded): log in, pick the skill, send the message, fill the
input widget, see the approval pause, approve from the supervisor's inbox, and watch the
customer's page update live. Every wait is on page state."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.server.helpers import key

from skillwire.server import ServerSettings, create_app
from skillwire.server.serve import running

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's chromium is not installed at /usr/bin/chromium (.ci/run installs it)",
)

pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency")
from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402


@pytest.fixture
def base_url(settings: ServerSettings) -> Iterator[str]:
    """The server, on a free loopback port."""
    with running(create_app(settings)) as url:
        yield url


@pytest.fixture
def browser() -> Iterator[Browser]:
    """Debian's chromium, with a fresh profile (Playwright makes one per launch)."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=FLAGS, headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


def open_as(browser: Browser, base_url: str, who: str, errors: list[str]) -> Page:
    """A fresh browser context (its own cookies), logged in as ``who`` through the form."""
    context = browser.new_context(base_url=base_url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login\?next=/$"))
    page.get_by_label("API key").fill(key(who))
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#whoami")).to_contain_text(who)
    return page


def test_the_refund_flow_through_the_page(browser: Browser, base_url: str) -> None:
    expect.set_options(timeout=15_000)
    errors: list[str] = []

    # The customer picks the skill and asks for a refund of 750.
    alice = open_as(browser, base_url, "alice", errors)
    alice.get_by_role("link", name="Refund support", exact=True).click()
    alice.get_by_label("Your message").fill("I want a refund of $750")
    alice.get_by_role("button", name="Send", exact=True).click()

    # The job pauses for the order number: the widget, with one field, order_id.
    form = alice.locator("#input-widget")
    expect(form).to_be_visible()
    expect(alice.locator("#job-status")).to_have_text("paused")
    expect(alice.locator("#job-outcome")).to_have_text("USER_ACTION_REQUIRED")
    expect(form.locator("[data-field]")).to_have_count(1)
    expect(form.locator('[data-field="order_id"]')).to_be_visible()
    expect(alice.locator("#live")).to_have_attribute("data-live", "on")

    # The customer answers; the refund now waits for a supervisor, and no widget shows.
    form.get_by_label("Order id").fill("ORD-12345")
    form.get_by_role("button", name="Send").click()
    expect(alice.locator("#job-outcome")).to_have_text("APPROVAL_REQUIRED")
    expect(alice.locator("#input-widget")).to_have_count(0)
    expect(alice.locator("#approval-tool")).to_have_text("process_refund")
    expect(alice.locator("#approve")).to_have_count(0)
    # The timeline grew live with the resume, the tools and the approval pause.
    rows = alice.locator("#timeline-rows")
    expect(rows.locator('tr[data-kind="input_received"]')).to_have_count(1)
    expect(rows.locator('tr[data-kind="gate_decision"]').last).to_contain_text("APPROVAL_REQUIRED")

    # The supervisor opens the inbox: the tool, its arguments and the reason; approves.
    sup = open_as(browser, base_url, "sup", errors)
    expect(sup.locator("#nav-approvals .badge")).to_have_text("1")
    sup.get_by_role("link", name=re.compile("Approvals")).click()
    item = sup.locator(".approval-item")
    expect(item).to_have_count(1)
    expect(item).to_contain_text("process_refund")
    expect(item).to_contain_text('"order_id": "ORD-12345"')
    expect(item).to_contain_text('"amount": 750')
    expect(item).to_contain_text("needs supervisor approval")
    item.get_by_role("button", name="Approve").click()

    # The supervisor lands on the finished job: the reply and the whole timeline.
    expect(sup.locator("#job-status")).to_have_text("completed")
    expect(sup.locator("#job-reply")).to_contain_text("ORD-12345")
    expect(sup.locator('#timeline-rows tr[data-kind="approval_granted"]')).to_have_count(1)

    # The customer's open page followed along, live: status, reply, timeline, model calls.
    expect(alice.locator("#job-status")).to_have_text("completed")
    expect(alice.locator("#job-reply")).to_contain_text("refunded")
    expect(rows.locator('tr[data-kind="approval_granted"]')).to_have_count(1)
    expect(rows.locator('tr[data-kind="polished"]')).to_have_count(1)
    expect(alice.locator("#call-rows tr.call td:nth-child(2)", has_text="gate")).to_have_count(1)
    expect(alice.locator("#live")).to_have_attribute("data-live", "ended")

    # The job list shows it, completed.
    alice.get_by_role("link", name="Jobs", exact=True).click()
    expect(alice.locator("table.jobs tbody tr")).to_have_count(1)
    expect(alice.locator("table.jobs .status")).to_have_text("completed")
    assert errors == []
