"""A throwaway PostgreSQL cluster for the tests: started in a temporary folder, on a
Unix socket there, trust authentication, stopped and removed at the end.

PostgreSQL refuses to run as root, so as root the cluster is run by the unprivileged
``postgres`` user (``runuser -u postgres --``); as anyone else, by that user. The server
binaries are found in ``$SKILLWIRE_PG_BIN``, else the newest
``/usr/lib/postgresql/*/bin``, else on ``PATH``. ``$SKILLWIRE_TEST_DSN`` names a server
to use instead of starting one.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["Cluster", "find_bin"]


def find_bin() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or None."""
    if os.environ.get("SKILLWIRE_PG_BIN"):
        return Path(os.environ["SKILLWIRE_PG_BIN"])
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if found:
        return found[-1].parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


class Cluster:
    """One running cluster; :meth:`stop` ends it and removes its folder (also at exit)."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="skillwire-pg-"))
        self.data = self.root / "data"
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.user = "postgres" if self.as_user else _current_user()
        self._stopped = False
        atexit.register(self.stop)
        try:
            self._run(
                "initdb", "-D", str(self.data), "-A", "trust", "-U", self.user,
                "-E", "UTF8", "--locale=C", "--no-sync",
            )  # fmt: skip
            options = (
                f"-k {self.root} -c listen_addresses='' -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
            )
            self._run(
                "pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-o", options,
                "-w", "-t", "60", "start",
            )  # fmt: skip
        except BaseException:
            self.stop()
            raise

    def dsn(self, dbname: str = "postgres") -> str:
        """A ``postgresql://`` URL of database ``dbname`` over the cluster's socket."""
        return f"postgresql://{self.user}@/{dbname}?host={self.root}"

    def stop(self) -> None:
        """Stop the server (immediately: nothing in it is kept) and remove its folder."""
        if self._stopped:
            return
        self._stopped = True
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def log(self) -> str:
        """The server's log so far (for a failure's message)."""
        path = self.root / "log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [*self.as_user, str(self.bin / program), *args],
            capture_output=True, text=True, timeout=120, check=False, cwd=self.root,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(
                f"{program} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}\n{self.log()}"
            )


def _current_user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name
