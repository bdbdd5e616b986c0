"""The login cookie holds a server-side session's id, never the API key: HttpOnly,
SameSite=Strict, Path=/, Secure over HTTPS; logout closes the session for good; a
forged, expired or orphaned session is refused."""

from __future__ import annotations

import hashlib
import secrets
from http.cookies import SimpleCookie

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from tests.server.helpers import ROLES, auth, key, server_config

from skillwire.config import ServerKey
from skillwire.server import ServerSettings, create_app
from skillwire.server.auth import COOKIE_NAME, KeyRing, hash_key
from skillwire.server.context import ServerContext


def log_in(client: TestClient, who: str, **headers: str) -> str:
    """Log ``who`` in through the form; the raw ``Set-Cookie`` header."""
    client.cookies.clear()
    response = client.post(
        "/login", data={"key": key(who), "next": "/"}, headers=headers, follow_redirects=False
    )
    assert response.status_code == 303, response.text
    header: str = response.headers["set-cookie"]
    return header


def cookie_of(header: str) -> str:
    """The login cookie's value in a ``Set-Cookie`` header."""
    jar: SimpleCookie = SimpleCookie()
    jar.load(header)
    return jar[COOKIE_NAME].value


def attributes(header: str) -> set[str]:
    """The cookie's attributes, lowercased (``httponly``, ``samesite=strict`` ...)."""
    return {part.strip().lower() for part in header.split(";")[1:]}


def context(app: FastAPI) -> ServerContext:
    """The server context of ``app``."""
    ctx: ServerContext = app.state.skillwire
    return ctx


def as_cookie(client: TestClient, value: str) -> TestClient:
    """``client`` presenting ``value`` as its login cookie, and nothing else."""
    client.cookies.clear()
    client.cookies.set(COOKIE_NAME, value)
    return client


def refused(client: TestClient) -> bool:
    """Whether both the page and the API turn the client's cookie away."""
    page = client.get("/", follow_redirects=False)
    api = client.get("/api/me")
    return (
        page.status_code == 303
        and "/login" in page.headers["location"]
        and (api.status_code == 401)
    )


def test_the_cookie_holds_a_session_id_not_the_key(client: TestClient) -> None:
    header = log_in(client, "alice")
    value = cookie_of(header)
    assert value != key("alice") and key("alice") not in header
    assert hash_key(key("alice")) not in header
    assert len(value) >= 43  # 256 random bits, URL-safe base64
    assert {"httponly", "samesite=strict", "path=/"} <= attributes(header)
    assert "secure" not in attributes(header)  # plain HTTP: a Secure cookie would not return
    assert client.get("/api/me").json()["principal"] == "alice"
    assert "alice (user)" in client.get("/").text


def test_a_cookie_holding_the_key_itself_is_refused(client: TestClient) -> None:
    assert refused(as_cookie(client, key("alice")))
    client.cookies.clear()
    client.cookies.set("skillwire_key", key("alice"))  # the cookie of earlier versions
    assert client.get("/api/me").status_code == 401


def test_logout_closes_the_session_on_the_server(client: TestClient) -> None:
    value = cookie_of(log_in(client, "alice"))
    gone = client.post("/logout", follow_redirects=False)
    assert gone.status_code == 303
    assert (
        COOKIE_NAME in gone.headers["set-cookie"]
        and "max-age=0" in gone.headers["set-cookie"].lower()
    )
    assert refused(as_cookie(client, value))  # a copy of the cookie kept after logout


def test_a_new_login_closes_the_previous_session(client: TestClient) -> None:
    first = cookie_of(log_in(client, "alice"))
    client.post("/login", data={"key": key("alice")}, follow_redirects=False)
    second = client.cookies.get(COOKIE_NAME)
    assert second and second != first
    assert client.get("/api/me").json()["principal"] == "alice"
    assert refused(as_cookie(client, first))


def test_over_https_the_cookie_is_secure(app: FastAPI) -> None:
    with TestClient(app, base_url="https://testserver") as client:
        header = log_in(client, "alice")
        assert {"secure", "httponly", "samesite=strict", "path=/"} <= attributes(header)
        assert client.get("/api/me").json()["principal"] == "alice"
        assert "secure" in attributes(client.post("/logout").history[0].headers["set-cookie"])


@pytest.mark.parametrize(("trust", "secure"), [(False, False), (True, True)])
def test_x_forwarded_proto_counts_only_behind_a_trusted_proxy(
    settings: ServerSettings, trust: bool, secure: bool
) -> None:
    settings.config.server.trust_proxy = trust
    with TestClient(create_app(settings)) as client:
        header = log_in(client, "alice", **{"X-Forwarded-Proto": "https"})
        assert ("secure" in attributes(header)) is secure
        assert "secure" not in attributes(log_in(client, "alice", **{"X-Forwarded-Proto": "http"}))


def test_forged_and_dumped_session_ids_are_refused(app: FastAPI, client: TestClient) -> None:
    value = cookie_of(log_in(client, "alice"))
    sessions = context(app).sessions
    dump = repr(vars(sessions))
    assert value not in dump and key("alice") not in dump  # the map holds digests only
    digest = hashlib.sha256(value.encode()).hexdigest()
    assert digest in dump
    for forged in (
        secrets.token_urlsafe(32),
        digest,  # the map's key, as a memory dump would show it
        hash_key(key("alice")),  # the key's digest, as the configuration holds it
        value + "\n",
        value[:-1],
        "x" * 4000,
        "\ud800",
    ):
        assert sessions.principal(forged, context(app).keys) is None
    for forged in (secrets.token_urlsafe(32), digest, hash_key(key("alice")), value[:-1]):
        assert refused(as_cookie(client, forged))
    assert not refused(as_cookie(client, value))  # the real one still works


def test_a_session_ends_with_its_key(app: FastAPI, client: TestClient) -> None:
    value = cookie_of(log_in(client, "alice"))
    ctx = context(app)
    configured = ctx.keys
    others = [
        ServerKey(principal=name, roles=roles, key_sha256=hash_key(key(name)))
        for name, roles in ROLES.items()
        if name != "alice"
    ]
    ctx.keys = KeyRing(others)  # as a reload of the keys without alice's would
    try:
        assert refused(as_cookie(client, value))
    finally:
        ctx.keys = configured
    assert refused(as_cookie(client, value))  # closed, not only suspended


def test_a_session_takes_its_roles_from_the_key_now(app: FastAPI, client: TestClient) -> None:
    value = cookie_of(log_in(client, "alice"))
    ctx = context(app)
    ctx.keys = KeyRing(
        [ServerKey(principal="alice", roles=["admin"], key_sha256=hash_key(key("alice")))]
    )
    assert as_cookie(client, value).get("/api/me").json()["roles"] == ["admin"]


def test_a_session_expires() -> None:
    from skillwire.server.sessions import LoginSessions

    now = [1000.0]
    sessions = LoginSessions(lifetime=60, clock=lambda: now[0])
    keys = KeyRing(server_config().server.keys)
    value = sessions.open(hash_key(key("alice")))
    now[0] += 59
    principal = sessions.principal(value, keys)
    assert principal is not None and principal.name == "alice"
    now[0] += 1
    assert sessions.principal(value, keys) is None
    assert len(sessions) == 0


def test_logging_in_again_and_again_keeps_a_few_sessions_per_key() -> None:
    from skillwire.server.sessions import LoginSessions

    sessions = LoginSessions(per_key=3)
    keys = KeyRing(server_config().server.keys)
    opened = [sessions.open(hash_key(key("alice"))) for _ in range(100)]
    bob = sessions.open(hash_key(key("bob")))
    assert len(sessions) == 4
    assert [sessions.principal(v, keys) is not None for v in opened[-4:]] == [
        False,
        True,
        True,
        True,
    ]
    assert sessions.principal(bob, keys) is not None


def test_a_key_that_is_no_text_is_refused_not_a_failure(client: TestClient) -> None:
    assert hash_key("\ud800") != hash_key("\ufffd")
    bad = client.post(
        "/login",
        content=b"key=%ED%A0%80&next=/",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        follow_redirects=False,
    )
    assert bad.status_code == 401 and "not valid" in bad.text


def test_the_bearer_key_still_authenticates_the_api(client: TestClient) -> None:
    client.cookies.clear()
    assert client.get("/api/me", headers=auth("sup")).json()["principal"] == "sup"
