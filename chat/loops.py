"""Objects that belong to one event loop.

The event writer, the stop watch, the "queue moved" sender and the rollup lock each hold
asyncio tasks, futures or locks, which belong to the loop that made them; a process may run
several loops (daphne's, a worker's run loop, a test's), so each loop gets its own.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable


def per_loop[T](factory: Callable[[], T]) -> Callable[[], T]:
    """A getter of the running loop's own `factory()`, made on first use and dropped with the
    loop."""
    instances: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()

    def of_running_loop() -> T:
        loop = asyncio.get_running_loop()
        instance = instances.get(loop)
        if instance is None:
            instance = instances[loop] = factory()
        return instance

    return of_running_loop
