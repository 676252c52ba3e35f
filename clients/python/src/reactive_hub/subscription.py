"""One remote subscription: an async iterator whose ``__anext__`` is demand."""
from __future__ import annotations

import asyncio
import itertools
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any, Deque, Dict, List, Optional, Tuple, Union

from .errors import ErrorCode, HubError

if TYPE_CHECKING:
    from .hub import _Core

OVERFLOW_POLICIES = ("error", "dropOldest", "dropNewest", "latest")
MAX_SAFE = 2**53 - 1  # demand at or past it is unlimited
UNLIMITED = "unlimited"
#: Values a subscription keeps requested ahead of its consumer by default. The hub
#: sends no more than that, so it bounds what waits in this client's memory; and it
#: is what lets a consumer that falls behind for a while take the subject's values
#: off the hub (whose buffer holds 1,000 by default) instead of overflowing there,
#: and what covers the round trip of a `request` at high rates (half a window is
#: granted at a time, in one message).
DEFAULT_PREFETCH = 65536


def demand_value(n: Any, zero_allowed: bool) -> Union[int, str]:
    """A valid demand: an int ≥ 1 (≥ 0 when ``zero_allowed``) or "unlimited"."""
    if n == UNLIMITED or (isinstance(n, float) and n == float("inf")):
        return UNLIMITED
    if isinstance(n, int) and not isinstance(n, bool) and n >= (0 if zero_allowed else 1):
        return UNLIMITED if n >= MAX_SAFE else n
    lowest = 0 if zero_allowed else 1
    raise HubError(ErrorCode.INVALID_DEMAND, f'demand must be an integer >= {lowest} or "unlimited", got {n!r}')


def check_since(since: Any) -> Dict[str, Any]:
    """A valid ``since``: ``{"offset": N, "epoch"?: E}`` or ``{"last": K}`` with ints 0..2^53-1."""
    def count(n: Any) -> bool:
        return isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_SAFE
    if isinstance(since, dict):
        if "offset" in since and "last" not in since and count(since["offset"]):
            epoch = since.get("epoch")
            if epoch is not None and not isinstance(epoch, str):
                raise HubError(ErrorCode.INVALID_ARGUMENT, f"since epoch must be a string, got {epoch!r}")
            return {"offset": since["offset"]} if epoch is None else {"offset": since["offset"], "epoch": epoch}
        if "last" in since and "offset" not in since and count(since["last"]):
            return {"last": since["last"]}
    raise HubError(ErrorCode.INVALID_ARGUMENT,
                   f'since must be {{"offset": N, "epoch": E}} or {{"last": K}} with integers >= 0, got {since!r}')


def _retrieve(future: "asyncio.Future[Any]") -> None:
    """Marks a future's exception as seen (no "never retrieved" report); its awaiters still get it."""
    if not future.cancelled():
        future.exception()


class Subscription:
    """A subscription to a subject, named pipeline, trigger or pipeline text.

    Iterate it (``async for value in subscription``): with ``prefetch`` N > 0
    (default :data:`DEFAULT_PREFETCH`, 65,536) at most N values are requested
    ahead of the consumer, half a window at a time as values are consumed; with ``prefetch=0`` nothing is
    requested but what :meth:`request` grants. Iteration ends when the
    subscription completes or is cancelled, and raises its :class:`HubError`
    when it fails (once). Leaving an ``async with`` block, :meth:`cancel`,
    :meth:`aclose`, or dropping the last reference (a ``break`` out of
    ``async for`` over ``hub.subscribe(...)``) cancels it on the hub.
    """

    def __init__(self, core: "_Core", target: Dict[str, str], *, prefetch: int = DEFAULT_PREFETCH, demand: Any = None,
                 buffer: Optional[int] = None, overflow: Optional[str] = None, batch: Optional[bool] = None,
                 since: Optional[Dict[str, Any]] = None) -> None:
        if not isinstance(prefetch, int) or isinstance(prefetch, bool) or prefetch < 0:
            raise HubError(ErrorCode.INVALID_ARGUMENT, f"prefetch must be an integer >= 0, got {prefetch!r}")
        if demand is not None and prefetch != 0:
            raise HubError(ErrorCode.INVALID_ARGUMENT, "demand is for prefetch=0 (manual demand)")
        if buffer is not None and (not isinstance(buffer, int) or isinstance(buffer, bool) or buffer < 1):
            raise HubError(ErrorCode.INVALID_ARGUMENT, f"buffer must be an integer >= 1, got {buffer!r}")
        if overflow is not None and overflow not in OVERFLOW_POLICIES:
            raise HubError(ErrorCode.INVALID_ARGUMENT,
                           f"overflow must be one of {', '.join(OVERFLOW_POLICIES)}, got {overflow!r}")
        if since is not None and "pipeline" in target:
            raise HubError(ErrorCode.INVALID_ARGUMENT, "since needs a subject name (a pipeline keeps no history)")
        # Where the next subscribe starts: the option, then after the last delivered value.
        self._since: Optional[Dict[str, Any]] = check_since(since) if since is not None else None
        self._resuming = False
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
        #: The history offset of the last value iteration handed out: where this
        #: consumer stands (None for a name without history, or before the first value).
        self.last_offset: Optional[int] = None
        #: The epoch of the subject's history (None for a name without history).
        self.epoch: Optional[str] = None
        #: The subject's latest offset when the hub confirmed the subscription (None without history).
        self.start_offset: Optional[int] = None
        #: With ``since``: whether the hub still held what it asked for (None without since).
        self.recovered: Optional[bool] = None
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
            # A resumed subscription asks for the demand still unmet, since the last value it delivered.
            demand = self._outstanding() if resume else self._initial_demand
            fields = dict(self._target)
            if self._since is not None:
                fields["since"] = dict(self._since)
            self._core.register(self, fields, demand, self._options)
            if not resume:
                self.requested = float("inf") if demand == UNLIMITED else demand
            self._wire = True

        self._wait_token = self._core.with_connection(run)

    def _outstanding(self) -> Union[int, str]:
        """The demand granted and not yet delivered."""
        if self.requested == float("inf"):
            return UNLIMITED
        return max(0, int(self.requested) - self.delivered)

    def _resume_plan(self) -> Optional[Dict[str, Any]]:
        """Where this subscription resumes on a new connection, or None: a subscription to
        a subject with history (the hub sent an epoch) starts again after the last value
        it delivered."""
        if self._terminal is not None or self.epoch is None or self._since is None:
            return None
        return {"since": dict(self._since)}

    def _lost(self, error: HubError, reconnecting: bool = True) -> None:
        self._wire = False
        plan = self._resume_plan() if reconnecting else None
        if plan is not None:
            self._resuming = True
            self._start(plan)
        elif reconnecting and error.code == ErrorCode.DISCONNECTED and self.epoch is None:
            self._end(HubError(error.code, f"{error.message} (the subscription cannot resume: it keeps no history)",
                               close_code=error.close_code))
        else:
            self._end(error)

    def _confirmed(self, message: Dict[str, Any]) -> None:
        epoch = message.get("epoch")
        if isinstance(epoch, str):
            asked = self._since
            if message.get("recovered") is False and (self._resuming or asked is not None):
                # What followed the position asked for is gone: going on would hide a gap.
                where = f"offset {asked['offset']}" if asked and "offset" in asked else \
                    f"the last {asked.get('last') if asked else 0} values"
                self._core.cancel_subscription(self)
                self._wire = False
                self._end(HubError(
                    ErrorCode.RESUME_FAILED,
                    f"the hub no longer holds the values after {where} of {self._target.get('to')} "
                    f"(epoch now {epoch}, latest offset {message.get('offset')}): values were missed",
                    data=asked))
                return
            self.epoch = epoch
            if self.start_offset is None:
                self.start_offset = message.get("offset")
            if asked is not None and "offset" in asked and message.get("recovered") is True:
                self._since = {"offset": asked["offset"], "epoch": epoch}
            elif asked is not None and "last" in asked and message.get("recovered") is True:
                pass  # until a value arrives, asking for the last K again misses nothing
            else:
                self._since = {"offset": message.get("offset"), "epoch": epoch}
        else:
            self.epoch = None
            self._since = None
        if "recovered" in message and not self._resuming:
            self.recovered = message["recovered"]
        if self.kind is None:
            self.kind = message.get("kind")
            if not self._subscribed.done():
                self._subscribed.set_result(self.kind)

    def _deliver(self, value: Any, offset: Optional[int] = None) -> None:
        if self._terminal is not None:
            return
        self.delivered += 1
        known = offset if offset is not None and self.epoch is not None else None
        if known is not None:
            self._since = {"offset": known, "epoch": self.epoch}
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            self._waiter = None
            if known is not None:
                self.last_offset = known
            self._counted()
            waiter.set_result(value)
        else:
            self._queue.append((value, known))

    def _deliver_all(self, values: List[Any], offset: Optional[int]) -> None:
        """The values of one batch (``next`` with ``values``), the first at ``offset``."""
        if self._terminal is not None or not values:
            return
        known = offset if offset is not None and self.epoch is not None else None
        if known is None:
            self._deliver(values[0])
            if self._terminal is None and len(values) > 1:
                # The rest in one step: a batch costs one call, not one per value.
                self.delivered += len(values) - 1
                self._queue.extend(zip(values[1:], itertools.repeat(None)))
            return
        for index, value in enumerate(values):
            if self._terminal is not None:
                return
            self._deliver(value, known + index)

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
        value, offset = self._queue.popleft()
        if offset is not None:
            self.last_offset = offset
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
