"""What skill.json says of a package's life is made true: named files must exist,
runtime.minAgentVersion and requiredAdapters are checked, deprecated warns and shows,
enabledByDefault: false keeps a skill from being offered unless the operator enables it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import skillwire
from skillwire.config import ServerConfig, SkillwireConfig
from skillwire.server import ServerSettings, create_app
from skillwire.skills import load_paths
from skillwire.skills.package_lifecycle import parse_version

Edit = Callable[[str, Callable[[Any], None]], None]


def codes(folder: Path) -> tuple[bool, dict[str, list[str]]]:
    [rep] = load_paths([folder]).report.skills
    found: dict[str, list[str]] = {}
    for issue in rep.issues:
        found.setdefault(issue.code or "", []).append(f"{issue.severity}: {issue}")
    return rep.loaded, found


def test_a_named_file_that_is_missing_is_an_error(refund_pkg: Path, edit_package: Edit) -> None:
    (refund_pkg / "tests.json").unlink()
    loaded, found = codes(refund_pkg)  # named in skill.json's files
    assert not loaded
    [line] = found["missing-file"]
    assert line.startswith("error") and "names tests file 'tests.json'" in line
    assert "skill.json:" in line
    edit_package("skill.json", lambda d: d["files"].pop("tests"))
    loaded, found = codes(refund_pkg)  # left to its default name: may be absent
    assert loaded and "missing-file" not in found


def test_a_file_named_null_is_the_schemas_error(refund_pkg: Path, edit_package: Edit) -> None:
    """``"tests": null`` in ``files`` is the schema's error at its line, not a missing
    file (the lifecycle check also skips a name that is not text: a fuzz run once
    reached it with None, a path this test does not reproduce)."""
    (refund_pkg / "tests.json").unlink()
    edit_package("skill.json", lambda d: d["files"].update(tests=None))
    loaded, found = codes(refund_pkg)
    assert not loaded and "missing-file" not in found, found
    [rep] = load_paths([refund_pkg]).report.skills
    assert any("files.tests" in str(issue) for issue in rep.errors), rep.errors


@pytest.mark.parametrize(
    ("wanted", "ok"),
    [
        ("0.0.1", True),
        (skillwire.__version__, True),
        ("0.1", True),
        ("99.0.0", False),
        ("0.1.1", False),
        (">=0.2.0", False),
        ("v0.1.0", True),
    ],
)
def test_min_agent_version(edit_package: Edit, refund_pkg: Path, wanted: str, ok: bool) -> None:
    assert skillwire.__version__ == "0.1.0"  # the cases above are written against it
    edit_package("skill.json", lambda d: d["runtime"].update(minAgentVersion=wanted))
    loaded, found = codes(refund_pkg)
    assert loaded is ok
    if not ok:
        assert f"needs skillwire {wanted} or later; this is 0.1.0" in found["min-agent-version"][0]


def test_a_min_agent_version_that_is_no_version_is_an_error(
    edit_package: Edit, refund_pkg: Path
) -> None:
    edit_package("skill.json", lambda d: d["runtime"].update(minAgentVersion="latest"))
    loaded, found = codes(refund_pkg)
    assert not loaded and "is not a version" in found["min-agent-version"][0]


def test_parse_version() -> None:
    assert parse_version("1.2.3") == (1, 2, 3)
    assert parse_version("1.2.3rc1") == (1, 2, 3)
    assert parse_version("1.x.3") is None and parse_version("") is None
    assert parse_version("1..2") is None


def test_an_unknown_adapter_is_an_error(edit_package: Edit, refund_pkg: Path) -> None:
    edit_package("skill.json", lambda d: d["runtime"].update(requiredAdapters=["simulate", "ftp"]))
    loaded, found = codes(refund_pkg)
    assert not loaded and "'ftp' is no executor type" in found["unknown-adapter"][0]


def test_deprecated_warns_and_shows(edit_package: Edit, refund_pkg: Path, tmp_path: Path) -> None:
    edit_package("skill.json", lambda d: d["status"].update(state="deprecated"))
    loaded, found = codes(refund_pkg)
    assert loaded and found["deprecated"][0].startswith("warning")
    settings = ServerSettings(skill_paths=[refund_pkg], db=tmp_path / "j.db", config=_config())
    with TestClient(create_app(settings)) as client:
        [skill] = client.get("/api/skills", headers=_auth()).json()["skills"]
        assert skill["state"] == "deprecated" and skill["content_version"]


def test_disabled_by_default_is_not_offered_unless_enabled(
    edit_package: Edit, refund_pkg: Path, tmp_path: Path
) -> None:
    edit_package("skill.json", lambda d: d["status"].update(enabledByDefault=False))
    loaded, found = codes(refund_pkg)
    assert loaded and found["disabled-by-default"]
    for enable, offered in (([], False), (["refund-support-pkg"], True)):
        settings = ServerSettings(
            skill_paths=[refund_pkg], db=tmp_path / f"{offered}.db", config=_config(enable)
        )
        with TestClient(create_app(settings)) as client:
            skills = client.get("/api/skills", headers=_auth()).json()["skills"]
            assert bool(skills) is offered
            started = client.post(
                "/api/jobs",
                headers=_auth(),
                json={"skill_id": "refund-support-pkg", "message": "Refund 120 for ORD-12345"},
            )
            assert (started.status_code == 201) is offered, started.text
            if not offered:
                assert "disabled by default" in started.text


def _config(enable: list[str] | None = None) -> SkillwireConfig:
    from tests.server.helpers import server_config

    base = server_config()
    return base.model_copy(
        update={"server": ServerConfig(keys=base.server.keys, enable=enable or [])}
    )


def _auth() -> dict[str, str]:
    from tests.server.helpers import auth

    return auth("alice")
