"""The PostgreSQL the store tests run against (see :mod:`bench.pg_cluster`, which the
benchmarks use too) and a fresh database per test.

Without the server binaries the PostgreSQL tests skip, loudly; in CI (``CI=true``) they
fail instead, so that CI never passes without them.
"""

from __future__ import annotations

import itertools
import os
import warnings
from collections.abc import Iterator

import pytest
from bench.pg_cluster import Cluster, find_bin

_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A ``postgresql://`` URL of a server's maintenance database (``postgres``)."""
    if os.environ.get("SKILLWIRE_TEST_DSN"):
        yield os.environ["SKILLWIRE_TEST_DSN"]
        return
    bin_dir = find_bin()
    if bin_dir is None or not (bin_dir / "initdb").exists():
        message = (
            "PostgreSQL server binaries (initdb, pg_ctl) not found: set SKILLWIRE_PG_BIN "
            "or install postgresql; the PostgreSQL tests cannot run"
        )
        if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
            pytest.fail(message)
        warnings.warn(message, stacklevel=1)
        pytest.skip(f"SKIPPED LOUDLY: {message}")
    cluster = Cluster(bin_dir)
    try:
        yield cluster.dsn()
    finally:
        cluster.stop()


@pytest.fixture
def pg_dsn(pg_server: str) -> Iterator[str]:
    """A URL of a new, empty database, dropped after the test."""
    import psycopg

    name = f"t{os.getpid()}_{next(_numbers)}"
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name} TEMPLATE template0")
    base, _, query = pg_server.partition("?")
    try:
        yield f"{base.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")
    finally:
        with psycopg.connect(pg_server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
