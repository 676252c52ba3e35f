"""How a :class:`~reactive_hub.Hub` reconnects after losing an established connection."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class ReconnectPolicy:
    """Exponential back-off: ``initial_delay`` seconds, ×``multiplier`` per failed
    attempt, capped at ``max_delay``; ``max_attempts`` in a row before giving up
    (None: never); ``jitter`` (0…1) takes a random fraction off each delay so that
    many clients do not reconnect in step. The first connection is never retried.
    """

    initial_delay: float = 0.1
    multiplier: float = 2.0
    max_delay: float = 5.0
    max_attempts: Optional[int] = None
    jitter: float = 0.2

    def delay(self, attempt: int) -> float:
        """The delay in seconds before attempt ``attempt`` (1-based)."""
        delay = self.initial_delay
        step = 1
        while step < attempt and delay < self.max_delay:
            delay *= max(1.0, self.multiplier)
            step += 1
        delay = min(delay, self.max_delay)
        jitter = min(max(self.jitter, 0.0), 1.0)
        return delay * (1 - jitter * random.random())
