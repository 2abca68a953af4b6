"""What the engine asks about spending limits: nothing more than "may this run go deeper?".

The host owns budgets (who has one, how spending is counted across processes); the engine
only learns, through this dependency, that a limit has been reached. A run that crosses its
budget mid-way finishes the attempt it is in and does not escalate: the person gets the
answer already paid for instead of a more expensive one nobody approved.
"""

from __future__ import annotations

from typing import Protocol


class SpendingLimit(Protocol):
    async def exceeded(self) -> str | None:
        """Why no more spending is allowed (a sentence to show), or None while within budget."""
        ...


class NoLimit:
    """The default: no budget applies."""

    async def exceeded(self) -> str | None:
        return None
