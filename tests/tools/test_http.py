"""The ``http_request`` executor against a real server on 127.0.0.1: templates, the
operator's hosts only (redirects elsewhere, IP spellings, user information refused),
credentials in headers only, timeouts, the response size cap, JSON or text."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.tools.helpers import package, tool_of, write_package
from tests.tools.http_server import Seen, serve
from typer.testing import CliRunner

from skillwire.cli_app import app
from skillwire.core.executor import ToolOutcome
from skillwire.tools import Credentials, Executors, HttpExecutor
from skillwire.tools.http import render_url

TOKEN = "http-token-abcdef123456"


@pytest.fixture
def server() -> Iterator[tuple[int, Seen]]:
    with serve() as found:
        yield found


def http_tool(name: str, url: str, method: str = "GET", **spec: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"{method} {url}",
        "inputSchema": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}},
        },
        "executor": {"type": "http_request", "method": method, "url": url, **spec},
    }


def call(
    tmp_path: Path,
    spec: dict[str, Any],
    args: dict[str, Any],
    hosts: list[str],
    creds: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> ToolOutcome:
    skill = package(tmp_path, [spec], credentials=creds)
    executors = Executors(
        http=HttpExecutor(allowed_hosts=hosts), credentials=Credentials(environ=environ or {})
    )
    return asyncio.run(
        executors.execute(
            tool_of(skill, spec["name"]), args, idempotency_key="k1", skill_root=skill.root
        )
    )


def test_get_with_a_percent_encoded_template(tmp_path: Path, server: tuple[int, Seen]) -> None:
    port, seen = server
    spec = http_tool("item", f"http://127.0.0.1:{port}/items/{{{{id}}}}")
    out = call(tmp_path, spec, {"id": "../admin?x=1#y"}, [f"127.0.0.1:{port}"])
    assert out.ok, out.error
    assert seen.requests[0]["path"] == "/items/..%2Fadmin%3Fx%3D1%23y"
    assert out.result["body"] == {"item": "..%2Fadmin%3Fx%3D1%23y"}
    assert out.result["status"] == 200
    assert seen.requests[0]["headers"]["Idempotency-Key"] == "k1"


def test_post_body_and_a_bound_credential_in_a_header(
    tmp_path: Path, server: tuple[int, Seen]
) -> None:
    port, seen = server
    spec = http_tool(
        "echo",
        f"http://127.0.0.1:{port}/echo",
        "POST",
        headers={"Authorization": "Bearer {{API_TOKEN}}"},
        body={"id": "{{id}}", "qty": "{{qty}}", "note": "for {{id}}"},
    )
    creds = {
        "credentials": [
            {"id": "SVC_TOKEN", "type": "env", "required": True, "secret": True,
             "redaction": {"showPrefix": 4, "showSuffix": 0}}
        ],
        "bindings": [{"tool": "echo", "credentialId": "SVC_TOKEN", "target": "API_TOKEN"}],
    }  # fmt: skip
    out = call(
        tmp_path,
        spec,
        {"id": "A1", "qty": 3},
        [f"127.0.0.1:{port}"],
        creds,
        {"SVC_TOKEN": TOKEN},
    )
    assert out.ok, out.error
    assert seen.requests[0]["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert json.loads(seen.requests[0]["body"]) == {"id": "A1", "qty": 3, "note": "for A1"}
    # the server echoed the token: the outcome shows it redacted
    assert out.result["body"]["auth"] == "Bearer http****"
    assert TOKEN not in json.dumps(out.result)


def test_arguments_never_fill_headers(tmp_path: Path, server: tuple[int, Seen]) -> None:
    port, seen = server
    spec = http_tool("h", f"http://127.0.0.1:{port}/echo", headers={"X-Id": "{{id}}"})
    out = call(tmp_path, spec, {"id": "A1"}, [f"127.0.0.1:{port}"])
    assert out.ok
    assert "X-Id" not in seen.requests[0]["headers"]  # left out, never filled from args


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:{port}/items/x", "not one the operator allows (none)"),
        ("http://127.1:{port}/items/x", "is not one the operator allows"),
        ("http://2130706433:{port}/items/x", "is not one the operator allows"),
        ("http://[::ffff:127.0.0.1]:{port}/items/x", "is not one the operator allows"),
        ("http://localhost:{port}/items/x", "is not one the operator allows"),
        ("http://127.0.0.1:{port}@localhost:{port}/items/x", "user information"),
        ("http://user:pw@127.0.0.1:{port}/items/x", "user information"),
        ("file:///etc/passwd", "scheme 'file'"),
        ("http://127.0.0.1:1/items/x", "is not one the operator allows"),  # another port
    ],
)
def test_only_the_operators_hosts_are_reachable(
    tmp_path: Path, server: tuple[int, Seen], url: str, message: str
) -> None:
    port, seen = server
    hosts = [] if "(none)" in message else [f"127.0.0.1:{port}"]
    out = call(tmp_path, http_tool("t", url.format(port=port)), {}, hosts)
    assert not out.ok
    assert message in out.error, out.error
    assert seen.requests == []


def test_a_host_without_port_allows_the_default_port_only(tmp_path: Path) -> None:
    out = call(tmp_path, http_tool("t", "http://127.0.0.1:9/x"), {}, ["127.0.0.1"])
    assert not out.ok and "127.0.0.1:9" in out.error


def test_redirects_stay_on_allowed_hosts(tmp_path: Path, server: tuple[int, Seen]) -> None:
    port, seen = server
    hosts = [f"127.0.0.1:{port}"]
    same = call(tmp_path / "a", http_tool("t", f"http://127.0.0.1:{port}/redirect-same"), {}, hosts)
    assert same.ok and same.result["body"] == {"item": "moved"}
    seen.requests.clear()
    other = call(
        tmp_path / "b", http_tool("t", f"http://127.0.0.1:{port}/redirect-other"), {}, hosts
    )
    assert not other.ok and "localhost" in other.error
    assert [r["path"] for r in seen.requests] == ["/redirect-other"]  # never /items/stolen
    loop = call(tmp_path / "c", http_tool("t", f"http://127.0.0.1:{port}/redirect-loop"), {}, hosts)
    assert not loop.ok and "more than 5 redirects" in loop.error


def test_the_response_size_cap(tmp_path: Path, server: tuple[int, Seen]) -> None:
    port, _ = server
    hosts = [f"127.0.0.1:{port}"]
    for path in ("big", "big-chunked"):
        spec = http_tool("t", f"http://127.0.0.1:{port}/{path}", maxResponseBytes=100_000)
        out = call(tmp_path / path, spec, {}, hosts)
        assert not out.ok and "larger than 100000 bytes" in out.error, out


def test_a_timeout_fails_the_call(tmp_path: Path, server: tuple[int, Seen]) -> None:
    port, _ = server
    spec = http_tool("t", f"http://127.0.0.1:{port}/slow", timeoutMs=300)
    out = call(tmp_path, spec, {}, [f"127.0.0.1:{port}"])
    assert not out.ok and "timed out after 0.3 s" in out.error


def test_text_and_errors(tmp_path: Path, server: tuple[int, Seen]) -> None:
    port, _ = server
    hosts = [f"127.0.0.1:{port}"]
    text = call(tmp_path / "a", http_tool("t", f"http://127.0.0.1:{port}/text"), {}, hosts)
    assert text.ok and text.result["body"] == "plain words"
    forced = call(
        tmp_path / "b",
        http_tool("t", f"http://127.0.0.1:{port}/text", responseType="json"),
        {},
        hosts,
    )
    assert not forced.ok and forced.error == "the response is not JSON"
    failed = call(tmp_path / "c", http_tool("t", f"http://127.0.0.1:{port}/fail"), {}, hosts)
    assert not failed.ok and failed.error == "HTTP 500"
    assert failed.result["body"] == {"error": "broken"}


def test_render_url_refuses_what_is_not_a_scalar() -> None:
    assert render_url("http://h/{{a}}/{{b}}", {"a": "x y", "b": True}) == "http://h/x%20y/true"
    with pytest.raises(ValueError, match="missing"):
        render_url("http://h/{{a}}", {})
    with pytest.raises(ValueError, match="cannot be part of a URL"):
        render_url("http://h/{{a}}", {"a": ["x"]})


def test_skillwire_call_reaches_the_configured_hosts_only(
    tmp_path: Path, server: tuple[int, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, seen = server
    folder = write_package(
        tmp_path, [http_tool("item", f"http://127.0.0.1:{port}/items/{{{{id}}}}")]
    )
    runner = CliRunner()
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    refused = runner.invoke(app, ["call", str(folder), "item", "--args", '{"id": "7"}'])
    assert refused.exit_code == 4 and "not one the operator allows" in refused.stdout
    (tmp_path / "ok.toml").write_text(f'[tools]\nhttp_allowed_hosts = ["127.0.0.1:{port}"]\n')
    monkeypatch.setenv("SKILLWIRE_CONFIG", str(tmp_path / "ok.toml"))
    done = runner.invoke(app, ["call", str(folder), "item", "--args", '{"id": "7"}', "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["outcome"]["result"]["body"] == {"item": "7"}
    assert [r["path"] for r in seen.requests] == ["/items/7"]


def test_no_cookie_passes_from_one_call_to_the_next(
    tmp_path: Path, server: tuple[int, Seen]
) -> None:
    port, seen = server
    skill = package(
        tmp_path,
        [
            http_tool("setter", f"http://127.0.0.1:{port}/cookie"),
            http_tool("reader", f"http://127.0.0.1:{port}/items/x"),
        ],
    )
    executors = Executors(http=HttpExecutor(allowed_hosts=[f"127.0.0.1:{port}"]))

    async def both() -> None:
        for name in ("setter", "reader"):
            out = await executors.execute(
                tool_of(skill, name), {}, idempotency_key="k", skill_root=skill.root
            )
            assert out.ok, out.error
        await executors.aclose()

    asyncio.run(both())
    assert "Cookie" not in seen.requests[1]["headers"]
