"""The Author page: admins only; a draft started from a description loads; the report
follows the text; a save is refused while the text has errors and shows its diff when
it loads; draft names never name a path."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from tests.server.helpers import key

from skillwire.server import ServerSettings


def login(client: TestClient, who: str) -> TestClient:
    client.cookies.clear()
    response = client.post("/login", data={"key": key(who), "next": "/"}, follow_redirects=False)
    assert response.status_code == 303
    return client


def start(client: TestClient, name: str = "desk") -> None:
    response = client.post(
        "/author",
        data={"name": name, "description": "Answer <b>order</b> questions. Refund orders."},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text
    assert response.headers["location"] == f"/author/{name}"


def test_only_admins_author(client: TestClient) -> None:
    login(client, "alice")
    assert client.get("/author").status_code == 403
    assert client.post("/author", data={"name": "x", "description": "y"}).status_code == 403
    assert "/author" not in client.get("/").text
    login(client, "boss")
    assert client.get("/author").status_code == 200
    assert 'href="/author"' in client.get("/").text


def test_a_draft_from_a_description_loads_and_its_text_is_escaped(
    client: TestClient, settings: ServerSettings
) -> None:
    login(client, "boss")
    start(client)
    assert (settings.db.parent / "drafts" / "desk" / "domain.yaml").is_file()
    page = client.get("/author/desk").text
    assert "Loads: no errors" in page
    assert "&lt;b&gt;order&lt;/b&gt;" in page and "<b>order</b>" not in page
    assert 'href="/author/desk"' in client.get("/author").text


def test_the_report_follows_the_text_and_shows_the_fix(client: TestClient) -> None:
    login(client, "boss")
    start(client)
    text = client.get("/author/desk").text
    broken = (
        "problem: {statement: x}\nintents: {supported: [{id: i, examples: [hi]}]}\n"
        "tools: [{name: t, inputs: [{name: amount, type: number}]}]\n"
        "policy: {approvals: [{tool_id: t, when: 'amout > 5', approver: boss}]}\n"
    )
    report = client.post("/author/desk/check", data={"text": broken}).text
    assert "Does not load" in report and "did you mean `amount`" in report
    fixed = broken.replace("amout", "amount")
    report = client.post("/author/desk/check", data={"text": fixed}).text
    assert "Loads: no errors" in report
    assert "<code>amount &gt; 5</code>" in report  # the CEL that runs
    assert text  # the page rendered


def test_a_save_is_refused_while_it_does_not_load_and_shows_the_diff(
    client: TestClient, settings: ServerSettings
) -> None:
    login(client, "boss")
    start(client)
    path = settings.db.parent / "drafts" / "desk" / "domain.yaml"
    before = path.read_text()
    refused = client.post("/author/desk/save", data={"text": "tools: [*]\n"})
    assert refused.status_code == 422
    assert "Not saved" in refused.text and path.read_text() == before
    changed = "# kept as written\n" + before.replace("version: 0.1.0", "version: 0.2.0")
    saved = client.post("/author/desk/save", data={"text": changed})
    assert saved.status_code == 200 and "Saved." in saved.text
    assert "+version: 0.2.0" in saved.text and "-version: 0.1.0" in saved.text
    assert path.read_text() == changed


def test_draft_names_never_name_a_path(client: TestClient, settings: ServerSettings) -> None:
    login(client, "boss")
    for name in ("..", ".hidden", "a/b", "%2e%2e", "x" * 65, "é"):
        response = client.post("/author", data={"name": name, "description": "d"})
        assert response.status_code in (404, 422), (name, response.status_code)
    assert client.get("/author/..%2f..%2fetc").status_code == 404
    assert client.post("/author/.._x/check", data={"text": ""}).status_code == 404
    assert not (settings.db.parent / "drafts").exists()


def test_a_draft_that_is_a_symlink_out_of_the_drafts_folder_is_no_draft(
    client: TestClient, settings: ServerSettings, tmp_path: Path
) -> None:
    login(client, "boss")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "domain.yaml").write_text("id: secret\n")
    drafts = settings.db.parent / "drafts"
    drafts.mkdir(parents=True, exist_ok=True)
    (drafts / "evil").symlink_to(outside, target_is_directory=True)
    assert client.get("/author/evil").status_code == 404
    saved = client.post("/author/evil/save", data={"text": "id: changed\n"})
    assert saved.status_code == 404
    assert (outside / "domain.yaml").read_text() == "id: secret\n"  # never written through


def test_a_post_from_another_site_is_refused(client: TestClient) -> None:
    login(client, "boss")
    response = client.post(
        "/author", data={"name": "x", "description": "y"}, headers={"origin": "https://evil"}
    )
    assert response.status_code == 403
