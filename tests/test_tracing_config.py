"""Turning tracing on: ``[tracing]`` of skillwire.toml and the standard ``OTEL_*``
variables (they win), and what the CLI does with them (docs/deploy.md, "Tracing").

The CLI runs in a subprocess: setting up the SDK sets the process's global tracer
provider, which cannot be undone."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.engine.helpers import ORDER, approval_script

from skillwire.config import load_config
from skillwire.core.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
OTEL = ("OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME")


@pytest.fixture
def no_otel(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (*OTEL, "SKILLWIRE_CONFIG", "SKILLWIRE_MODEL", "SKILLWIRE_GATE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "skillwire.toml"
    path.write_text(text)
    return path


def test_off_by_default_on_from_the_file(tmp_path: Path, no_otel: pytest.MonkeyPatch) -> None:
    no_otel.chdir(tmp_path)
    assert load_config().tracing.enabled is False
    path = config_file(tmp_path, '[tracing]\nenabled = true\nexporter = "otlp"\n')
    tracing = load_config(path).tracing
    assert (tracing.enabled, tracing.exporter, tracing.service_name) == (True, "otlp", "skillwire")


def test_the_otel_variables_win_over_the_file(tmp_path: Path, no_otel: pytest.MonkeyPatch) -> None:
    on = config_file(tmp_path, "[tracing]\nenabled = true\n")
    no_otel.setenv("OTEL_TRACES_EXPORTER", "none")
    assert load_config(on).tracing.enabled is False
    no_otel.setenv("OTEL_TRACES_EXPORTER", "OTLP")
    off = config_file(tmp_path, "[tracing]\nenabled = false\n")
    assert (load_config(off).tracing.enabled, load_config(off).tracing.exporter) == (True, "otlp")
    no_otel.setenv("OTEL_SDK_DISABLED", "true")
    assert load_config(off).tracing.enabled is False


@pytest.mark.parametrize(
    ("text", "env", "said"),
    [
        ('[tracing]\nexporter = "jaeger"\n', "", "tracing.exporter"),
        ("[tracing]\nenabled = true\nendpoint = 'x'\n", "", "tracing.endpoint"),
        ("", "zipkin", "OTEL_TRACES_EXPORTER='zipkin'"),
    ],
)
def test_a_wrong_setting_is_a_usage_error(
    tmp_path: Path, no_otel: pytest.MonkeyPatch, text: str, env: str, said: str
) -> None:
    if env:
        no_otel.setenv("OTEL_TRACES_EXPORTER", env)
    with pytest.raises(UsageError, match=said.replace("[", r"\[")):
        load_config(config_file(tmp_path, text))


def run_cli(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``skillwire run`` of the refund example on the scripted model, in a subprocess."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(approval_script()))
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SKILLWIRE_"))}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "skillwire",
            "run",
            str(ROOT / "examples" / "refund_support"),
            "-m",
            f"Refund 750 for {ORDER}",
            "--model",
            f"scripted:{script}",
        ],
        cwd=tmp_path,
        env={**clean, "PYTHONPATH": str(ROOT / "src"), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_cli_exports_spans_to_the_console(tmp_path: Path) -> None:
    done = run_cli(tmp_path, OTEL_TRACES_EXPORTER="console", OTEL_SERVICE_NAME="refunds")
    assert done.returncode == 0, done.stderr
    for name in ("invoke_agent refund-support", "chat script.json", "gate process_refund"):
        assert f'"name": "{name}"' in done.stdout
    assert '"service.name": "refunds"' in done.stdout
    quiet = run_cli(tmp_path)  # no variable, no file: off
    assert quiet.returncode == 0 and '"name": "invoke_agent' not in quiet.stdout


def otlp_installed() -> bool:
    try:
        return importlib.util.find_spec("opentelemetry.exporter.otlp") is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(otlp_installed(), reason="an OTLP exporter is installed here")
def test_otlp_without_its_exporter_says_what_to_install(tmp_path: Path) -> None:
    done = run_cli(tmp_path, OTEL_TRACES_EXPORTER="otlp")
    assert done.returncode == 2
    assert "opentelemetry-exporter-otlp-proto-http" in done.stderr
    assert "Traceback" not in done.stderr
