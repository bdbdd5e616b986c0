"""The Author page clicked through in real headless Chromium (Debian's, driven by
Playwright): an admin starts a draft from a description, breaks a condition and sees the
report say so with the fix as they type, fixes it and sees the CEL that runs, saves and
sees the diff. Every wait is on page state."""

from __future__ import annotations

import pytest
from tests.server.test_browser import CHROMIUM, base_url, browser, open_as

from skillwire.server import ServerSettings

__all__ = ["base_url", "browser"]  # the fixtures, used by name

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="no chromium at /usr/bin/chromium")
pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency")
from playwright.sync_api import Browser, expect  # noqa: E402


def test_an_admin_writes_a_draft_with_the_report_live(
    browser: Browser, base_url: str, settings: ServerSettings
) -> None:
    expect.set_options(timeout=15_000)
    errors: list[str] = []
    page = open_as(browser, base_url, "boss", errors)
    page.get_by_role("link", name="Author", exact=True).click()
    page.get_by_label("Name (letters, digits, - and _)").fill("desk")
    page.get_by_label("What the agent is for").fill("Refund orders. Track parcels.")
    page.get_by_role("button", name="Start the draft").click()
    expect(page.locator("#report-status")).to_have_text("Loads: no errors.")

    editor = page.locator("#draft-text")
    text = editor.input_value()
    assert "id: desk" in text
    broken = text + (
        "policy:\n  approvals:\n    - tool_id: look_up\n      when: quer == 'x'\n"
        "      approver: supervisor\n"
    )
    editor.fill(broken)
    expect(page.locator("#report-status")).to_contain_text("Does not load")
    expect(page.locator("#report")).to_contain_text("did you mean `query`?")

    editor.fill(broken.replace("quer ==", "query starts with 'x' and query =="))
    expect(page.locator("#report-status")).to_have_text("Loads: no errors.")
    expect(page.locator("#report table.rules")).to_contain_text(
        "query.startsWith('x') && query == 'x'"
    )

    page.get_by_role("button", name="Save").click()
    expect(page.locator("#saved")).to_have_text("Saved.")
    expect(page.locator("#diff")).to_contain_text("+  approvals:")
    saved = (settings.db.parent / "drafts" / "desk" / "domain.yaml").read_text()
    assert "query starts with 'x'" in saved
    assert errors == []


def test_the_author_link_is_for_admins_only(browser: Browser, base_url: str) -> None:
    expect.set_options(timeout=15_000)
    errors: list[str] = []
    page = open_as(browser, base_url, "alice", errors)
    expect(page.get_by_role("link", name="Author", exact=True)).to_have_count(0)
    page.goto("/author")
    expect(page.locator("body")).to_contain_text("admins")
