"""The Celery broker transport: kombu's Redis transport, minus one step that kills workers.

When the connection to Redis drops, kombu closes the channel and "restores" the jobs the
worker holds unacknowledged, putting them back on the queue. In kombu 5.7 that restore runs
after the channel's connection pool is gone, fails with AttributeError("'NoneType' object has
no attribute 'hostname'"), and Celery treats it as unrecoverable: the worker stopped consuming
and waited, runs included, for someone to start another (the issue saw it in 2 of 3 outages).

Nexus needs no restore there: the runs keep executing on the worker's event loop through an
outage; a job whose worker really died comes back through the sweeper (stale heartbeat) or
Redis's own visibility timeout (`restore_visible`, which stays on). So the channel does not
restore on close, and the worker reconnects. A run that finishes after the reconnect is then
acknowledged on the channel that was closed, which failed the same way (AttributeError, no
connection): that acknowledgement is dropped instead, and when the visibility timeout hands the
job out again, run_claim finds the run finished and skips it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kombu.transport import redis, virtual


class QoS(redis.QoS):
    def ack(self, delivery_tag: str) -> None:
        if self.channel.closed:  # the connection it came by is gone; see above
            virtual.QoS.ack(self, delivery_tag)
            return
        super().ack(delivery_tag)

    def reject(self, delivery_tag: str, requeue: bool = False) -> None:
        if self.channel.closed:
            virtual.QoS.ack(self, delivery_tag)
            return
        super().reject(delivery_tag, requeue=requeue)


class Channel(redis.Channel):
    QoS = QoS
    do_restore = False

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        """kombu builds a new redis client (around the same connection pool) for every
        acknowledgement and every job taken; building a redis-py 8 client copies its whole
        table of response callbacks, which made that most of the CPU a job cost in the worker.
        A client is only a handle on the pool, so one per channel serves them all."""
        if client:
            yield client
            return
        if self._shared_client is None:
            self._shared_client = self._create_client()
        yield self._shared_client

    _shared_client: Any = None


class Transport(redis.Transport):
    Channel = Channel
