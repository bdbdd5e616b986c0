"""``/api/docs`` works with no network (issue 17, item 8): the page names only files this
server serves, and each of them is there."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient


def test_the_api_docs_load_only_local_files(client: TestClient) -> None:
    page = client.get("/api/docs")
    assert page.status_code == 200
    html = page.text
    assert "SwaggerUIBundle" in html
    urls = re.findall(r'(?:src|href)="([^"]*)"', html)
    urls += re.findall(r"url: '([^']*)'", html)
    assert len(urls) >= 4, urls  # the script, the style sheet, the icon, the document
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), url
        assert client.get(url).status_code == 200, url
    assert "http://" not in html and "https://" not in html
    assert '"validatorUrl": null' in html  # no call to validator.swagger.io either


def test_the_vendored_swagger_ui_keeps_its_licence(client: TestClient) -> None:
    licence = client.get("/static/vendor/swagger-ui/LICENSE")
    assert licence.status_code == 200 and "Apache License" in licence.text
    script = client.get("/static/vendor/swagger-ui/swagger-ui-bundle.js")
    assert script.headers["content-type"].startswith(("text/javascript", "application/javascript"))
