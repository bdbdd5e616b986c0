"""``skillwire.toml``: which models exist, which one runs, where jobs are stored.

    [runtime]
    model = "local"            # the default model name ("offline" when unset)
    gate_model = "offline"     # the finalization gate's model (default: the same)
    db = ".skillwire/jobs.db"  # a relative path is relative to this file's folder
    durability = "default"     # strict | default | fast (docs/engine.md, "Durability")

    [tools]
    python_modules = ["mycompany.tools"]  # modules python tools may name (and submodules)
    timeout = 30.0             # seconds a tool call may take unless it says ``timeoutMs``
    sandbox = "auto"           # shell tools in bubblewrap: auto | required | off
    shell_path = "/usr/local/bin:/usr/bin:/bin"  # where shell tools' programs are found
    http_allowed_hosts = ["api.example.com", "127.0.0.1:8080"]  # all http tools may reach

    [tools.mcp_servers.files]  # an MCP server mcp tools may name (or: url = "http://...")
    command = ["python3", "-m", "my_mcp_server"]

    [credentials]
    secrets_file = "secrets.toml"  # ID = "value" lines; the environment wins over it
    env = ["REFUND_API_TOKEN"]     # variables packages may read (none unless listed)

    [tracing]                  # OpenTelemetry spans (docs/deploy.md, "Tracing")
    enabled = true             # off by default; OTEL_TRACES_EXPORTER turns it on too
    exporter = "console"       # console | otlp (OTEL_EXPORTER_OTLP_* say where)

    [models.local]
    backend = "openai"         # openai | anthropic | offline
    model = "llama3.1"
    base_url = "http://127.0.0.1:11434/v1"

    [server]                   # ``skillwire serve`` (docs/server.md)
    skills = ["skills"]        # skill paths when none are given on the command line
    sync_wait = 10.0           # seconds a request waits for a job before answering 202
    enable = ["my-skill"]      # packages offered although enabledByDefault is false

    [trust]                    # signed skills (docs/lifecycle.md)
    keys = ["keys/team.pub"]   # trusted public keys (``skillwire signing-key new``)
    [[trust.folders]]
    path = "skills"            # every skill under it must be signed by a trusted key
    require_signature = true

    [[server.keys]]            # one per API key; the key itself is never stored
    principal = "alice"
    roles = ["user"]           # user | admin | an approver role a rule names (supervisor)
    key_sha256 = "..."         # ``skillwire keys hash KEY`` prints it

The file is found by ``--config``, else ``$SKILLWIRE_CONFIG``, else ``./skillwire.toml``;
``$SKILLWIRE_MODEL`` and ``$SKILLWIRE_GATE_MODEL`` override the runtime's choices, and
``$OTEL_TRACES_EXPORTER`` (``console``, ``otlp``, ``none``) and ``$OTEL_SDK_DISABLED``
the tracing ones. The
model ``offline`` always exists. A skill's ``engine.model`` picks a configured model by
name; an unconfigured name falls back to the default, and the caller is told.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from skillwire.core.errors import UsageError

if TYPE_CHECKING:
    from skillwire.skills.signing import TrustPolicy

__all__ = [
    "CredentialsConfig",
    "McpServerConfig",
    "ModelConfig",
    "RuntimeConfig",
    "ServerConfig",
    "ServerKey",
    "SkillwireConfig",
    "ToolsConfig",
    "TracingConfig",
    "TrustConfig",
    "TrustFolder",
    "load_config",
    "trust_policy",
]


class ModelConfig(BaseModel):
    """One named model."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    backend: Literal["openai", "anthropic", "offline"]
    """Which backend serves it."""
    model: str = ""
    """The provider's model name (e.g. ``gpt-4o-mini``)."""
    base_url: str | None = None
    """The server, for OpenAI-compatible servers (vLLM, Ollama, llama.cpp) or proxies."""
    api_key_env: str | None = None
    """The environment variable holding the key (default OPENAI_API_KEY / ANTHROPIC_API_KEY)."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds per call."""
    max_retries: int = Field(default=2, ge=0, le=10)
    """Retries on 429, 5xx and timeouts, with backoff."""
    tool_mode: Literal["native", "json"] = "native"
    """``json`` for servers without tool calling (OpenAI-compatible only)."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Largest reply (Anthropic requires one; default 1024)."""


class RuntimeConfig(BaseModel):
    """Runtime choices."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    model: str = "offline"
    """The default model's name."""
    gate_model: str | None = None
    """The finalization gate's model (default: the same as ``model``)."""
    db: str | None = None
    """The SQLite file for jobs; a relative path is relative to the folder of the
    configuration file (``$SKILLWIRE_DB`` and ``--db`` win over it)."""
    base_policy: str | None = None
    """The operator's base policy file."""
    durability: Literal["strict", "default", "fast"] = "default"
    """What a save of the job store survives (docs/engine.md, "Durability"): ``default``
    fsyncs the save before a tool that is not idempotent and every pause's save,
    ``strict`` every save, ``fast`` none."""


ModuleName = Annotated[str, Field(pattern=r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")]


class McpServerConfig(BaseModel):
    """An MCP server ``mcp`` tools may call: a stdio ``command`` or an HTTP ``url``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    command: list[str] | None = Field(default=None, min_length=1)
    """The program and its arguments; skillwire starts it once per runtime, in the
    configuration file's folder."""
    url: str | None = None
    """A streamable HTTP endpoint, already running."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment of a stdio server (never secrets: bind credentials instead)."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command and url")
        return self


class ToolsConfig(BaseModel):
    """How tools run: where python tools may come from, how long a call may take."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    python_modules: list[ModuleName] = Field(default_factory=list)
    """Modules that python tools may name besides their skill's own folder; each allows
    itself and its submodules (``mycompany.tools`` allows ``mycompany.tools.refunds``)."""
    timeout: float = Field(default=30.0, gt=0, le=3600)  # tools.DEFAULT_TOOL_TIMEOUT
    """Seconds a tool call may take when its executor declares no ``timeoutMs``."""
    sandbox: Literal["auto", "required", "off"] = "auto"
    """Shell tools in a bubblewrap sandbox: ``auto`` when ``bwrap`` is installed,
    ``required`` refuses to run them without it, ``off`` never sandboxes them."""
    shell_path: str = Field(default="/usr/local/bin:/usr/bin:/bin", min_length=1)
    """The ``PATH`` shell tools' programs are looked up in (never the runtime's own)."""
    http_allowed_hosts: list[str] = Field(default_factory=list)
    """The hosts (``host`` or ``host:port``) ``http_request`` tools may reach; none
    unless listed."""
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """The MCP servers ``mcp`` tools may name, by name."""


class CredentialsConfig(BaseModel):
    """Where package credentials come from besides the environment."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    secrets_file: str | None = None
    """A TOML file of ``ID = "value"`` strings (relative to the configuration file's
    folder); a variable of the environment with the same name wins over it."""
    env: list[str] = Field(default_factory=list)
    """The environment variables package credentials may be read from (``"*"``: any);
    none unless listed. Model API keys and ``SKILLWIRE_*`` are never read."""


class ServerKey(BaseModel):
    """One API key of ``skillwire serve``: who holds it and what they may do."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    principal: str = Field(min_length=1, max_length=200)
    """Who the key belongs to; the owner of the jobs started with it."""
    roles: list[str] = Field(default_factory=lambda: ["user"])
    """``user`` (start jobs, see and answer their own), ``admin`` (see every job, reload
    skills), or an approver role that a rule names (``supervisor``)."""
    key_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """The SHA-256 of the key, as lowercase hex (``skillwire keys hash KEY``)."""


class ServerConfig(BaseModel):
    """``skillwire serve``: API keys and how long a request waits for a job."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    keys: list[ServerKey] = Field(default_factory=list)
    """The API keys (stored hashed)."""
    skills: list[str] = Field(default_factory=list)
    """Skill files or folders served when ``skillwire serve`` is given none."""
    sync_wait: float = Field(default=10.0, ge=0, le=600)
    """Seconds a request that starts or resumes a job waits for it to pause or end;
    a job still running then is answered with 202 and goes on in the background."""
    max_body_bytes: int = Field(default=1_048_576, ge=1024, le=1_073_741_824)
    """The largest request body accepted, in bytes; a larger one is refused with 413."""
    enable: list[str] = Field(default_factory=list)
    """Skills (by id) offered for new jobs although their package says
    ``status.enabledByDefault: false``."""
    trust_proxy: bool = False
    """Believe ``X-Forwarded-Proto`` from a reverse proxy in front (the login cookie is
    then ``Secure`` when the proxy was reached over HTTPS). Only when every request
    comes through that proxy."""

    @field_validator("keys")
    @classmethod
    def _unique_keys(cls, keys: list[ServerKey]) -> list[ServerKey]:
        seen: set[str] = set()
        for key in keys:
            if key.key_sha256 in seen:
                raise ValueError(f"two keys have the same key_sha256 ({key.principal})")
            seen.add(key.key_sha256)
        return keys


class TrustFolder(BaseModel):
    """A folder of skills and whether its skills must be signed."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    path: str = Field(min_length=1)
    """The folder (relative to this file's folder); its sub-folders too."""
    require_signature: bool = False
    """Load a skill under it only if it carries a signature by a trusted key."""


class TrustConfig(BaseModel):
    """Which signing keys are trusted, and where signatures are required."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    keys: list[str] = Field(default_factory=list)
    """Files of trusted public keys (relative to this file's folder)."""
    folders: list[TrustFolder] = Field(default_factory=list)
    """Folders and their policy."""


class TracingConfig(BaseModel):
    """OpenTelemetry spans of jobs, model calls, gate decisions and tool runs."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    enabled: bool = False
    """Make and export spans (needs the ``otel`` extra: the OpenTelemetry SDK)."""
    exporter: Literal["console", "otlp"] = "console"
    """Where spans go: ``console`` (standard output) or ``otlp`` (needs the package
    ``opentelemetry-exporter-otlp-proto-http``; ``OTEL_EXPORTER_OTLP_*`` say where)."""
    service_name: str = Field(default="skillwire", min_length=1, max_length=200)
    """The spans' ``service.name`` (``OTEL_SERVICE_NAME`` wins over it)."""


class SkillwireConfig(BaseModel):
    """The whole configuration."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    runtime: RuntimeConfig = Field(default_factory=RuntimeConfig)
    """Runtime choices."""
    server: ServerConfig = Field(default_factory=ServerConfig)
    """``skillwire serve``: API keys and request behaviour."""
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    """How tools run."""
    credentials: CredentialsConfig = Field(default_factory=CredentialsConfig)
    """Where package credentials come from."""
    tracing: TracingConfig = Field(default_factory=TracingConfig)
    """OpenTelemetry spans (off by default)."""
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    """Named models."""
    trust: TrustConfig = Field(default_factory=TrustConfig)
    """Signed skills: trusted keys, folders that require a signature."""
    source: str = ""
    """Where the configuration was read from (empty: defaults)."""

    def model_named(self, name: str) -> ModelConfig | None:
        """The model called ``name`` (``offline`` always exists)."""
        if name in self.models:
            return self.models[name]
        if name == "offline":
            return ModelConfig(backend="offline")
        return None

    def names(self) -> list[str]:
        """Every configured model name, ``offline`` included."""
        return sorted({*self.models, "offline"})


def load_config(path: Path | None = None) -> SkillwireConfig:
    """Read the configuration (see the module docstring for where it is found)."""
    chosen = path or (
        Path(os.environ["SKILLWIRE_CONFIG"]) if os.environ.get("SKILLWIRE_CONFIG") else None
    )
    if chosen is None and Path("skillwire.toml").is_file():
        chosen = Path("skillwire.toml")
    data: dict[str, object] = {}
    if chosen is not None:
        try:
            data = tomllib.loads(chosen.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UsageError(f"no configuration file {chosen}") from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"{chosen}: {exc}") from None
    try:
        config = SkillwireConfig.model_validate({**data, "source": str(chosen or "")})
    except ValidationError as exc:
        lines = [
            f"{chosen}: {'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        ]
        raise UsageError("\n".join(lines)) from None
    env_model = os.environ.get("SKILLWIRE_MODEL")
    env_gate = os.environ.get("SKILLWIRE_GATE_MODEL")
    if env_model:
        config.runtime.model = env_model
    if env_gate:
        config.runtime.gate_model = env_gate
    _tracing_from_env(config.tracing)
    for name in (config.runtime.model, config.runtime.gate_model):
        if name and config.model_named(name) is None:
            raise UsageError(
                f"model {name!r} is not configured (known: {', '.join(config.names())})"
            )
    return config


def trust_policy(config: SkillwireConfig) -> TrustPolicy | None:
    """The loader's trust policy from ``[trust]`` (None when no folder requires a
    signature); key files are read now. Raises :class:`UsageError` for a key file that
    cannot be read or holds no Ed25519 public key."""
    from skillwire.skills.signing import TrustPolicy, trusted_keys

    required = [f for f in config.trust.folders if f.require_signature]
    if not required:
        return None
    base = Path(config.source).parent if config.source else Path.cwd()

    def at(name: str) -> Path:
        path = Path(name).expanduser()
        return path if path.is_absolute() else base / path

    return TrustPolicy(
        keys=trusted_keys(at(k) for k in config.trust.keys),
        required=[at(f.path).resolve() for f in required],
    )


def _tracing_from_env(tracing: TracingConfig) -> None:
    """The standard OpenTelemetry variables win over the file: ``OTEL_SDK_DISABLED=true``
    turns tracing off, ``OTEL_TRACES_EXPORTER`` on (``console``, ``otlp``) or off
    (``none``)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        tracing.enabled = False
        return
    chosen = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not chosen:
        return
    if chosen == "none":
        tracing.enabled = False
    elif chosen in ("console", "otlp"):
        tracing.enabled = True
        tracing.exporter = "console" if chosen == "console" else "otlp"
    else:
        raise UsageError(
            f"OTEL_TRACES_EXPORTER={chosen!r}: skillwire exports to console, otlp or none"
        )
