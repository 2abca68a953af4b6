"""The check a PostgreSQL connection pool runs on each connection it hands out.

After a database restart every idle connection in the pool is dead. psycopg_pool's own check
finds them one per request, waiting 1, 2, 4… seconds between tries: a web process holding
twenty saw its first requests wait the pool's whole timeout (20 s) and fail with a 500. Here
the first dead connection found has the pool check all its idle ones at once, so the next
connection handed out is a new one.
"""

from __future__ import annotations

from typing import Any


def check_pooled_connection(conn: Any) -> None:
    """Raise if `conn` is broken, after having the pool drop every other broken idle one."""
    from psycopg_pool import ConnectionPool

    try:
        ConnectionPool.check_connection(conn)
    except Exception:
        from django.db import connections

        pool = connections["default"].pool
        if pool is not None:
            pool.check()
        raise
