"""``skillwire serve``: choose the skills, the keys and the database, then run uvicorn."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from skillwire.config import SkillwireConfig
from skillwire.core.errors import UsageError

__all__ = ["default_skill_paths", "running", "serve"]


def default_skill_paths(config: SkillwireConfig) -> list[Path]:
    """``[server] skills``, else ``./skills``, else ``./examples``."""
    if config.server.skills:
        return [Path(p) for p in config.server.skills]
    for folder in (Path("skills"), Path("examples")):
        if folder.is_dir():
            return [folder]
    raise UsageError("no skills: give skill paths, set [server] skills, or create ./skills")


def _announce_dev(key: str, host: str, port: int) -> None:
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    out = Console(stderr=True, markup=False, emoji=False, highlight=False)  # --host is text
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    text = Text.assemble(
        ("DEVELOPMENT MODE", "bold"),
        ": one key with every role (user, admin and every approver role the skills "
        "name). Do not expose this server.\n\n  dev key: ",
        (key, "bold"),
        f"\n  page:    http://{shown}:{port}/login (paste the key)",
    )
    if host not in ("127.0.0.1", "localhost", "::1"):
        text.append(f"\n\nWARNING: listening on {host}, not only on this machine.", "bold red")
    out.print(Panel(text, title="skillwire serve --dev", border_style="red"))
    out.print(
        f"try: curl -H 'Authorization: Bearer {key}' http://{shown}:{port}/api/skills",
        soft_wrap=True,
    )


def serve(
    paths: list[Path],
    *,
    host: str,
    port: int,
    db: Path | None,
    dev: bool,
    config_path: Path | None,
    log_level: str = "info",
    queue: bool = False,
    watch: bool = False,
) -> None:
    """Run the server until interrupted (``queue``: jobs run on workers)."""
    try:
        import uvicorn
    except ImportError:
        raise UsageError("the server needs its extra: pip install 'skillwire[server]'") from None
    from skillwire.assembly import db_label, default_db, start_tracing
    from skillwire.config import load_config
    from skillwire.server.app import ServerSettings, create_app
    from skillwire.server.auth import new_key

    if watch:
        try:
            import watchfiles  # noqa: F401
        except ImportError:
            raise UsageError("--watch needs watchfiles: pip install 'skillwire[server]'") from None
    config = load_config(config_path)
    start_tracing(config)  # [tracing], OTEL_TRACES_EXPORTER (docs/deploy.md)
    skill_paths = paths or default_skill_paths(config)
    dev_key = new_key() if dev else None
    if not config.server.keys and dev_key is None:
        raise UsageError(
            "no API keys: add [[server.keys]] to skillwire.toml "
            "(skillwire keys new NAME --role user prints one), or run with --dev"
        )
    settings = ServerSettings(
        skill_paths=skill_paths,
        db=db or default_db(config),
        config=config,
        dev_key=dev_key,
        queue=queue,
        watch=watch,
    )
    app = create_app(settings)
    report = app.state.skillwire.service.book.last
    print(
        f"skillwire serve: {len(report.loaded)} skills from "
        f"{', '.join(str(p) for p in skill_paths)} "
        f"({report.report.error_count} errors), jobs in {db_label(settings.db)}",
        file=sys.stderr,
    )
    if dev_key is not None:
        _announce_dev(dev_key, host, port)
    from skillwire.engine.heap import freeze_startup_heap, tune_collector

    freeze_startup_heap()  # skills and app are loaded: full collections skip them
    tune_collector()  # jobs in flight are not walked every step or two
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=3,
        proxy_headers=False,
    )


@contextmanager
def running(app: Any, *, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``app`` with uvicorn in a background thread; yields its base URL.

    The socket is bound and listening before the thread starts, so the URL accepts
    connections at once (they queue until uvicorn takes them): nothing to wait for.
    For tests and benchmarks; loopback by default.
    """
    import socket
    import threading

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen(256)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1, access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="skillwire-uvicorn", daemon=True
    )
    thread.start()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
