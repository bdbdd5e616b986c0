"""Fixtures of the server tests: a skill folder, an app, a client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from tests.server.helpers import copy_refund, server_config

from skillwire.server import ServerSettings, create_app


@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    """A writable folder holding a copy of the refund skill."""
    dest = copy_refund(tmp_path / "skills" / "refund_support")
    return dest.parent


@pytest.fixture
def settings(tmp_path: Path, skills_dir: Path) -> ServerSettings:
    """Settings on a fresh database, with the offline model."""
    return ServerSettings(skill_paths=[skills_dir], db=tmp_path / "jobs.db", config=server_config())


@pytest.fixture
def app(settings: ServerSettings) -> FastAPI:
    """The application."""
    return create_app(settings)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    """A client of the application, its lifespan running."""
    with TestClient(app) as test_client:
        yield test_client
