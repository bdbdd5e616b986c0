"""The ``http_request`` executor: one request to a host the operator allows, on httpx.

- The ``url`` template is filled from the arguments, each value percent-encoded (a
  value cannot add a path segment, a query or a host). The result must be ``http`` or
  ``https``, carry no user information (``https://ok.example@evil.example``), and name a
  host of the operator's list (``[tools] http_allowed_hosts``: ``host`` or
  ``host:port``, compared exactly, IP literals included: ``127.1`` is not
  ``127.0.0.1``; a host alone allows its scheme's default port only). Nothing else is
  reachable: with no list, no request is sent.
- Redirects are followed by hand, at most five, each target checked like the first: a
  redirect to another host fails the call.
- ``headers`` are filled from the tool's bound credentials only (``{{TARGET}}``, the
  binding's target), never from the arguments (a header whose credential is unset is
  left out); ``body`` (JSON) from the arguments.
- ``timeoutMs`` bounds the whole call; a body larger than ``maxResponseBytes`` fails it.
  The runtime's proxy settings and ``.netrc`` are not used. One client per event loop
  keeps connections between calls, and keeps no cookie.

The result is ``{status, headers: {content-type}, body}``: JSON when the response says
it is (``responseType: auto``) or the tool asks for it, else text. A status outside
2xx fails the call and keeps the result.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from skillwire.core.errors import ToolRefusedError
from skillwire.core.executor import ToolOutcome
from skillwire.skills.model_tools import HttpRequestExecutor, Tool
from skillwire.tools.simulate import fill_template

__all__ = ["HttpExecutor", "host_allowed", "render_url"]

_FIELD = re.compile(r"\{\{\s*([A-Za-z_][\w-]*)\s*\}\}")
MAX_REDIRECTS = 5

Environment = Callable[[Tool, Path | None], dict[str, str]]


def render_url(template: str, args: Mapping[str, Any]) -> str:
    """``template`` with each ``{{field}}`` replaced by the argument, percent-encoded."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if args.get(name) is None:
            raise ToolRefusedError(f"argument '{name}' is missing (the URL needs it)")
        found = args[name]
        if isinstance(found, bool):
            text = "true" if found else "false"
        elif isinstance(found, str | int | float):
            text = str(found)
        else:
            raise ToolRefusedError(f"argument '{name}' cannot be part of a URL")
        return quote(text, safe="")

    return _FIELD.sub(value, template)


def _fill_headers(headers: Mapping[str, str], secrets: Mapping[str, str]) -> dict[str, str]:
    """The headers with ``{{TARGET}}`` filled from the tool's bound credentials; a header
    whose credential is unset (an optional one) is left out, never sent half filled."""
    out: dict[str, str] = {}
    for name, template in headers.items():
        wanted = _FIELD.findall(template)
        if any(w not in secrets for w in wanted):
            continue
        out[name] = _FIELD.sub(lambda m: secrets[m.group(1)], template)
    return out


def host_allowed(url: Any, allowed: Sequence[str]) -> str | None:
    """Why ``url`` (an httpx URL) may not be requested, or None."""
    if url.scheme not in ("http", "https"):
        return f"scheme '{url.scheme}' is not http or https"
    if url.userinfo:
        return "a URL with user information is refused"
    host = url.host.lower()
    if not host:
        return "the URL has no host"
    default = 443 if url.scheme == "https" else 80
    port = url.port or default
    for entry in allowed:
        want = entry.lower().strip()
        if want.count(":") == 1:  # host:port
            want_host, _, want_port = want.partition(":")
        elif want.startswith("[") and "]:" in want:  # [v6]:port
            want_host, _, want_port = want.rpartition(":")
        else:  # a host alone: its scheme's default port
            want_host, want_port = want, str(default)
        if host == want_host.strip("[]") and want_port == str(port):
            return None
    return f"host '{host}:{port}' is not one the operator allows ({', '.join(allowed) or 'none'})"


class HttpExecutor:
    """Runs ``http_request`` tools against the operator's ``allowed_hosts`` only.
    ``environment`` gives a tool's bound credentials (for its headers)."""

    def __init__(
        self,
        *,
        allowed_hosts: Sequence[str] = (),
        environment: Environment | None = None,
        transport: Any = None,
    ) -> None:
        self.allowed_hosts = tuple(allowed_hosts)
        self.environment = environment
        self.transport = transport
        self._clients: dict[asyncio.AbstractEventLoop, Any] = {}

    def _client(self, httpx: Any) -> Any:
        """The client of the running loop (its connections are kept between calls)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            for old in [k for k in self._clients if k.is_closed()]:
                del self._clients[old]
            no_cookies = http.cookiejar.CookieJar(
                http.cookiejar.DefaultCookiePolicy(allowed_domains=[])
            )  # shared by every tool: no call may leave a cookie for the next
            client = httpx.AsyncClient(
                follow_redirects=False,
                trust_env=False,
                transport=self.transport,
                cookies=no_cookies,
            )
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close the running loop's client."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    async def execute(
        self, tool: Tool, args: dict[str, Any], *, idempotency_key: str, skill_root: Path | None
    ) -> ToolOutcome:
        """Send the request; a refusal, a timeout, a too large body, a non-2xx status
        are failed outcomes."""
        spec = tool.executor
        if not isinstance(spec, HttpRequestExecutor):
            return ToolOutcome(False, error=f"{tool.name} has no http_request executor")
        try:
            import httpx2 as httpx
        except ImportError:
            return ToolOutcome(
                False, error="http_request tools need httpx2: pip install 'skillwire[tools]'"
            )
        seconds = spec.timeoutMs / 1000
        try:
            secrets = self.environment(tool, skill_root) if self.environment else {}
            url = httpx.URL(render_url(spec.url, args))
            headers = _fill_headers(spec.headers, secrets)
            body = fill_template(spec.body, args) if spec.body is not None else None
            return await asyncio.wait_for(
                self._send(httpx, spec, url, headers, body, idempotency_key), seconds
            )
        except ToolRefusedError as exc:
            return ToolOutcome(False, error=f"refused: {exc}")
        except TimeoutError:
            return ToolOutcome(False, error=f"timed out after {seconds:g} s")
        except httpx.InvalidURL as exc:
            return ToolOutcome(False, error=f"refused: invalid URL: {exc}")
        except httpx.HTTPError as exc:
            return ToolOutcome(False, error=f"request failed: {type(exc).__name__}: {exc}")

    async def _send(
        self,
        httpx: Any,
        spec: HttpRequestExecutor,
        url: Any,
        headers: dict[str, str],
        body: Any,
        key: str,
    ) -> ToolOutcome:
        method = spec.method
        seconds = spec.timeoutMs / 1000
        client = self._client(httpx)
        for _ in range(MAX_REDIRECTS + 1):
            problem = host_allowed(url, self.allowed_hosts)
            if problem is not None:
                raise ToolRefusedError(problem)
            request = client.build_request(
                method,
                url,
                headers={"Idempotency-Key": key, **headers},
                json=body if method not in ("GET", "DELETE") else None,
                timeout=seconds,
            )
            response = await client.send(request, stream=True)
            try:
                if response.is_redirect and "location" in response.headers:
                    url = url.join(response.headers["location"])
                    if response.status_code in (301, 302, 303):
                        method, body = "GET", None
                    continue
                data = await _read(response, spec.maxResponseBytes)
            finally:
                await response.aclose()
            return _outcome(response, data, spec)
        raise ToolRefusedError(f"more than {MAX_REDIRECTS} redirects")


async def _read(response: Any, cap: int) -> bytes:
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > cap:
        raise ToolRefusedError(f"the response is larger than {cap} bytes")
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) > cap:
            raise ToolRefusedError(f"the response is larger than {cap} bytes")
    return bytes(data)


def _outcome(response: Any, data: bytes, spec: HttpRequestExecutor) -> ToolOutcome:
    kind = response.headers.get("content-type", "")
    text = data.decode(response.encoding or "utf-8", errors="replace")
    body: Any = text
    wants_json = spec.responseType == "json" or (
        spec.responseType == "auto" and "json" in kind.split(";")[0]
    )
    if wants_json:
        try:
            body = json.loads(text)
        except ValueError:
            if spec.responseType == "json":
                return ToolOutcome(
                    False,
                    result={"status": response.status_code, "body": text[:2000]},
                    error="the response is not JSON",
                )
    result = {"status": response.status_code, "headers": {"content-type": kind}, "body": body}
    if not 200 <= response.status_code < 300:
        return ToolOutcome(False, result=result, error=f"HTTP {response.status_code}")
    return ToolOutcome(True, result=result)
