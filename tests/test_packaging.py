"""Packaging conventions (issue 17, item 8): ``--version``, ``python -m skillwire``,
``serve`` without the ``server`` extra, and the ``py.typed`` marker in the wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib.resources import files
from pathlib import Path

import pytest
from typer.testing import CliRunner

import skillwire
from skillwire.cli_app import app

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


def python(*args: str) -> subprocess.CompletedProcess[str]:
    """Run this Python on this checkout's ``src`` (not an installed copy)."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_version_is_the_packages() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"skillwire {project['version']}\n"
    assert skillwire.__version__ == project["version"]


def test_python_dash_m_skillwire_runs_the_command() -> None:
    result = python("-m", "skillwire", "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: skillwire [OPTIONS] COMMAND")
    assert "serve" in result.stdout
    assert python("-m", "skillwire", "--version").stdout.startswith("skillwire ")


@pytest.mark.parametrize("missing", ["fastapi", "uvicorn", "jinja2"])
def test_serve_without_the_server_extra_says_what_to_install(missing: str) -> None:
    """With a module of the extra not importable, one line on stderr, exit 2."""
    code = (
        "import sys\n"
        f"sys.modules[{missing!r}] = None  # import fails as if it were not installed\n"
        "sys.argv = ['skillwire', 'serve', '--dev']\n"
        "from skillwire.cli import main\n"
        "main()\n"
    )
    result = python("-c", code)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "pip install 'skillwire[server]'" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_another_missing_module_is_not_blamed_on_the_extra() -> None:
    """A module outside the extra that fails to import is a bug: not the extra's message."""
    code = (
        "import sys\n"
        "sys.modules['skillwire.server.serve'] = None\n"
        "sys.argv = ['skillwire', 'serve', '--dev']\n"
        "from skillwire.cli import main\n"
        "main()\n"
    )
    result = python("-c", code)
    assert result.returncode != 0
    assert "skillwire[server]" not in result.stderr


def test_py_typed_is_in_the_package_and_the_wheel() -> None:
    assert files("skillwire").joinpath("py.typed").is_file()
    hatchling = pytest.importorskip("hatchling.builders.wheel")
    shipped = {
        f.distribution_path for f in hatchling.WheelBuilder(str(ROOT)).recurse_included_files()
    }
    assert "skillwire/py.typed" in shipped
    vendored = "skillwire/server/static/vendor/swagger-ui/"
    for name in ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png", "LICENSE"):
        assert vendored + name in shipped
    classifiers = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["classifiers"]
    assert "Typing :: Typed" in classifiers
