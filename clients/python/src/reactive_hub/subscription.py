"""One remote subscription: an async iterator whose ``__anext__`` is demand."""
from __future__ import annotations

import asyncio
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any, Deque, Dict, Optional, Tuple, Union

from .errors import ErrorCode, HubError

if TYPE_CHECKING:
    from .hub import _Core

OVERFLOW_POLICIES = ("error", "dropOldest", "dropNewest", "latest")
MAX_SAFE = 2**53 - 1  # demand at or past it is unlimited
UNLIMITED = "unlimited"


def demand_value(n: Any, zero_allowed: bool) -> Union[int, str]:
    """A valid demand: an int ≥ 1 (≥ 0 when ``zero_allowed``) or "unlimited"."""
    if n == UNLIMITED or (isinstance(n, float) and n == float("inf")):
        return UNLIMITED
    if isinstance(n, int) and not isinstance(n, bool) and n >= (0 if zero_allowed else 1):
        return UNLIMITED if n >= MAX_SAFE else n
    lowest = 0 if zero_allowed else 1
    raise HubError(ErrorCode.INVALID_DEMAND, f'demand must be an integer >= {lowest} or "unlimited", got {n!r}')


def _retrieve(future: "asyncio.Future[Any]") -> None:
    """Marks a future's exception as seen (no "never retrieved" report); its awaiters still get it."""
    if not future.cancelled():
        future.exception()


class Subscription:
    """A subscription to a subject, named pipeline, trigger or pipeline text.

    Iterate it (``async for value in subscription``): with ``prefetch`` N > 0
    (default 16) at most N values are requested ahead of the consumer, half a
    window at a time as values are consumed; with ``prefetch=0`` nothing is
    requested but what :meth:`request` grants. Iteration ends when the
    subscription completes or is cancelled, and raises its :class:`HubError`
    when it fails (once). Leaving an ``async with`` block, :meth:`cancel`,
    :meth:`aclose`, or dropping the last reference (a ``break`` out of
    ``async for`` over ``hub.subscribe(...)``) cancels it on the hub.
    """

    def __init__(self, core: "_Core", target: Dict[str, str], *, prefetch: int = 16, demand: Any = None,
                 buffer: Optional[int] = None, overflow: Optional[str] = None, batch: Optional[bool] = None) -> None:
        if not isinstance(prefetch, int) or isinstance(prefetch, bool) or prefetch < 0:
            raise HubError(ErrorCode.INVALID_ARGUMENT, f"prefetch must be an integer >= 0, got {prefetch!r}")
        if demand is not None and prefetch != 0:
            raise HubError(ErrorCode.INVALID_ARGUMENT, "demand is for prefetch=0 (manual demand)")
        if buffer is not None and (not isinstance(buffer, int) or isinstance(buffer, bool) or buffer < 1):
            raise HubError(ErrorCode.INVALID_ARGUMENT, f"buffer must be an integer >= 1, got {buffer!r}")
        if overflow is not None and overflow not in OVERFLOW_POLICIES:
            raise HubError(ErrorCode.INVALID_ARGUMENT,
                           f"overflow must be one of {', '.join(OVERFLOW_POLICIES)}, got {overflow!r}")
        self._core = core
        self._target = dict(target)
        self._prefetch = prefetch
        self._initial_demand: Union[int, str] = prefetch if prefetch > 0 else demand_value(demand or 0, True)
        self._options = {"buffer": buffer, "overflow": overflow, "batch": batch}
        #: The wire id of the live subscription (None until it is sent).
        self.id: Optional[int] = None
        #: The kind the hub answered: "subject", "pipeline" or "trigger" (None until then).
        self.kind: Optional[str] = None
        #: Values the hub delivered to this subscription (consumed or not).
        self.delivered = 0
        #: Demand granted so far (float("inf"): unlimited).
        self.requested: Union[int, float] = 0
        #: The history offset of the last delivered value: None while the protocol
        #: has no history (issue 9 fills it and resumes from it).
        self.last_offset: Any = None
        self._queue: Deque[Any] = deque()
        self._waiter: Optional["asyncio.Future[Any]"] = None
        self._terminal: Optional[Tuple[Optional[HubError], bool]] = None  # (error, cancelled)
        self._terminal_reported = False
        self._consumed_since_grant = 0
        self._wire = False
        self._wait_token: Optional[int] = None
        self._finalizer: Optional[weakref.finalize] = None
        loop = asyncio.get_running_loop()
        self._subscribed: "asyncio.Future[Optional[str]]" = loop.create_future()
        self._subscribed.add_done_callback(_retrieve)
        self._done: "asyncio.Future[None]" = loop.create_future()
        self._done.add_done_callback(_retrieve)
        self._start(None)

    # ---- Public API ----

    @property
    def target(self) -> Dict[str, str]:
        """``{"to": name}`` or ``{"pipeline": text}``."""
        return dict(self._target)

    @property
    def ended(self) -> bool:
        """Whether it completed, failed or was cancelled."""
        return self._terminal is not None

    async def subscribed(self) -> Optional[str]:
        """Waits for the hub's confirmation and returns the kind; raises the failure if it fails first."""
        return await asyncio.shield(self._subscribed)

    async def done(self) -> None:
        """Waits until it completes or is cancelled; raises its failure."""
        await asyncio.shield(self._done)

    def request(self, n: Union[int, str]) -> None:
        """Grants ``n`` more values (an int ≥ 1, or "unlimited")."""
        amount = demand_value(n, False)
        if self._terminal is None:
            self._grant(amount)

    def cancel(self) -> None:
        """Cancels: nothing more arrives; a waiting iteration ends."""
        if self._terminal is not None:
            return
        if self._wait_token is not None:
            self._core.cancel_waiting(self._wait_token)
            self._wait_token = None
        if self._wire:
            self._core.cancel_subscription(self)
        self._wire = False
        self._queue.clear()
        self._end(None, cancelled=True)

    async def aclose(self) -> None:
        """Cancels (the async-iterator protocol's close)."""
        self.cancel()

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> Any:
        if self._queue:
            return self._consume()
        if self._terminal is not None:
            return self._terminal_result()
        waiter = asyncio.get_running_loop().create_future()
        self._waiter = waiter
        try:
            return await waiter
        except StopAsyncIteration:
            raise
        finally:
            if self._waiter is waiter:
                self._waiter = None

    async def __aenter__(self) -> "Subscription":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.cancel()

    def __repr__(self) -> str:
        state = "ended" if self.ended else ("live" if self._wire else "pending")
        return f"<Subscription {self._target} id={self.id} {state} delivered={self.delivered}>"

    # ---- Called by the hub's core ----

    def _start(self, resume: Optional[Dict[str, Any]]) -> None:
        def run(error: Optional[HubError]) -> None:
            self._wait_token = None
            if self._terminal is not None:
                return
            if error is not None:
                self._end(error)
                return
            demand = resume["demand"] if resume else self._initial_demand
            fields = {**self._target, **(resume["fields"] if resume else {})}
            self._core.register(self, fields, demand, self._options)
            self.requested = float("inf") if demand == UNLIMITED else demand
            self._wire = True

        self._wait_token = self._core.with_connection(run)

    def _resume_plan(self) -> Optional[Dict[str, Any]]:
        """The subscribe fields that resume this subscription on a new connection, or None.

        Protocol v1 has no history (issue 9): a lost subscription cannot be
        resumed without losing values, so it fails with ``disconnected``. With
        history, this returns ``{"fields": {"since": self.last_offset}, "demand":
        <outstanding demand>}`` and the subscription is subscribed again on the
        next connection.
        """
        return None

    def _lost(self, error: HubError) -> None:
        self._wire = False
        plan = self._resume_plan()
        if plan is not None:
            self._start(plan)
        else:
            self._end(error)

    def _confirmed(self, kind: str) -> None:
        self.kind = kind
        if not self._subscribed.done():
            self._subscribed.set_result(kind)

    def _deliver(self, value: Any) -> None:
        if self._terminal is not None:
            return
        self.delivered += 1
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            self._waiter = None
            self._counted()
            waiter.set_result(value)
        else:
            self._queue.append(value)

    def _finish(self) -> None:
        self._wire = False
        self._end(None)

    def _fail(self, error: HubError) -> None:
        self._wire = False
        self._end(error)

    # ---- Internals ----

    def _grant(self, amount: Union[int, str]) -> None:
        if self.requested == float("inf"):
            return
        if amount == UNLIMITED or self.requested + amount >= MAX_SAFE:  # type: ignore[operator]
            self.requested = float("inf")
        else:
            self.requested += amount  # type: ignore[operator]
        if self._wire:
            self._core.request_more(self, amount)
        elif self._initial_demand != UNLIMITED:
            # Not sent yet: the demand goes out with the subscribe.
            if self.requested == float("inf"):
                self._initial_demand = UNLIMITED
            else:
                self._initial_demand += amount  # type: ignore[operator]

    def _consume(self) -> Any:
        value = self._queue.popleft()
        self._counted()
        return value

    def _counted(self) -> None:
        """A value went to the consumer: keep the prefetch window full (half a window at a time)."""
        if self._prefetch == 0 or self._terminal is not None:
            return
        self._consumed_since_grant += 1
        if self._consumed_since_grant >= max(1, self._prefetch // 2):
            grant = self._consumed_since_grant
            self._consumed_since_grant = 0
            self._grant(grant)

    def _terminal_result(self) -> Any:
        assert self._terminal is not None
        error, _ = self._terminal
        if error is not None and not self._terminal_reported:
            self._terminal_reported = True
            raise error
        raise StopAsyncIteration

    def _end(self, error: Optional[HubError], cancelled: bool = False) -> None:
        if self._terminal is not None:
            return
        self._terminal = (error, cancelled)
        self._core.forget(self)
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if not self._subscribed.done():
            if error is not None:
                self._subscribed.set_exception(error)
            elif cancelled:
                self._subscribed.set_exception(
                    HubError(ErrorCode.CANCELLED, "the subscription was cancelled before the hub confirmed it"))
            else:
                self._subscribed.set_result(None)
        if not self._done.done():
            if error is not None:
                self._done.set_exception(error)
            else:
                self._done.set_result(None)
        # A waiter exists only while the queue is empty: it gets the end now.
        waiter = self._waiter
        self._waiter = None
        if waiter is not None and not waiter.done():
            if error is not None and not self._terminal_reported:
                self._terminal_reported = True
                waiter.set_exception(error)
            else:
                waiter.set_exception(StopAsyncIteration())
