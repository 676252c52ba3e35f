"""A connection to a Reactive Hub (protocol v1, Protocol/PROTOCOL.md) over ``websockets``."""
from __future__ import annotations

import asyncio
import json
import logging
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Union
from urllib.parse import urlsplit

import websockets
from websockets.asyncio.client import ClientConnection, connect

from .errors import ErrorCode, HubError
from .reconnect import ReconnectPolicy
from .subscription import DEFAULT_PREFETCH, UNLIMITED, Subscription

SUBPROTOCOL = "hub.v1"
logger = logging.getLogger("reactive_hub")
_MISSING: Any = object()


def _encode(message: Dict[str, Any]) -> str:
    try:
        return json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise HubError(ErrorCode.INVALID_ARGUMENT, f"not JSON: {error}") from None


class Hub:
    """A connection to a hub.

    Calls made before it is open wait for it (the first call connects, or
    ``await hub.connect()``, or ``async with Hub(url) as hub``); after an
    established connection is lost, it reconnects with exponential back-off
    (``reconnect``, a :class:`ReconnectPolicy`, or None for never). A live
    subscription to a subject with history then resumes after the last value it
    delivered, within its demand (no gap, no duplicate); the others fail with
    ``disconnected`` (or the server's ``shutting_down``).

    ``url`` may be a list of URLs, the nodes of a cluster: the first connection
    tries each in turn at once (and fails, with the last failure, only when all
    did); after a loss the hub reconnects to the next one, with the same back-off.

    ``batch`` (default True) asks the hub for the batch form of ``next`` (several
    values in one message) for every subscription, unless a subscription's own
    ``batch`` says otherwise; ``batch=False`` keeps one message per value. Either
    way iteration hands out the values one by one.

    Events (``hub.on(name, callback)``): ``open`` (the session id),
    ``disconnect`` (the HubError), ``reconnecting`` (attempt, delay in s),
    ``error`` (a connection-level HubError the server reported).
    """

    def __init__(self, url: Union[str, Sequence[str]] = "ws://127.0.0.1:7420/", *, token: Optional[str] = None,
                 client: Optional[str] = None, batch: bool = True,
                 reconnect: Optional[ReconnectPolicy] = ReconnectPolicy(),
                 connect_timeout: float = 10.0, request_timeout: float = 10.0) -> None:
        self._core = _Core(_check_urls(url), token, client, batch, reconnect, connect_timeout, request_timeout)

    @property
    def url(self) -> str:
        """The URL in use now (one of :attr:`urls`)."""
        return self._core.url

    @property
    def urls(self) -> List[str]:
        """Every URL given, in the order they are tried."""
        return list(self._core.urls)

    @property
    def state(self) -> str:
        """``idle``, ``connecting``, ``open``, ``reconnecting`` or ``closed``."""
        return self._core.state

    @property
    def session(self) -> Optional[str]:
        """The session id of the open connection (from ``welcome``), else None."""
        return self._core.session

    def on(self, event: str, callback: Callable[..., Any]) -> None:
        """Calls ``callback`` on ``event``: open(session), disconnect(error), reconnecting(attempt, delay), error(error)."""
        if event not in self._core.listeners:
            raise HubError(ErrorCode.INVALID_ARGUMENT, f"no event {event!r}: one of {', '.join(self._core.listeners)}")
        self._core.listeners[event].append(callback)

    async def connect(self) -> None:
        """Connects now (calls connect by themselves); returns once welcomed."""
        await self._core.connection()

    async def send(self, to: str, value: Any) -> None:
        """Sends ``value`` (any JSON) to the subject ``to``; returns on the hub's ack."""
        await self._core.call({"op": "send", "to": to, "value": value})

    async def complete(self, to: str) -> None:
        """Completes the subject ``to``; returns on the hub's ack."""
        await self._core.call({"op": "complete", "to": to})

    async def delete(self, name: str) -> None:
        """Deletes the subject ``name``: its subscribers complete, a completed or failed
        subject can be used again, a declared one starts over; returns on the hub's ack."""
        await self._core.call({"op": "delete", "name": name})

    async def fail(self, to: str, error: Any) -> None:
        """Fails the subject ``to`` with ``error`` (any JSON); returns on the hub's ack."""
        await self._core.call({"op": "fail", "to": to, "error": error})

    async def trigger(self, name: str, key: Any = _MISSING) -> None:
        """Activates the trigger ``name``, with ``key`` (any JSON) when given; returns on the hub's ack."""
        message: Dict[str, Any] = {"op": "trigger", "name": name}
        if key is not _MISSING:
            message["key"] = key
        await self._core.call(message)

    async def get(self, table: str, key: Any) -> Any:
        """The current value of ``key`` (a string, or an integer: the same key as its
        decimal text) in the table subject ``table``, or ``None`` when the table has no
        such key (a table never holds ``null``: it deletes the key). A name that is not a
        table subject raises ``not_found``."""
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            raise HubError(ErrorCode.INVALID_ARGUMENT, f"get: key must be a string or an integer, got {key!r}")
        answer = await self._core.call({"op": "get", "name": table, "key": key})
        return answer.get("value") if answer.get("found") else None

    async def list(self) -> Dict[str, Any]:
        """The hub's whole catalog: ``{"subjects": [...], "pipelines": [...], "triggers": [...]}``
        (and ``"connections"`` when the hub says). A large catalog comes in pages
        (:meth:`list_page`): this asks for each in turn and joins them."""
        catalog = await self.list_page()
        following = catalog.pop("next", None)
        while following is not None:
            page = await self.list_page(after=following)
            if "next" in page and not _cursor_key(following) < _cursor_key(page["next"]):
                raise HubError(ErrorCode.PROTOCOL_ERROR,
                               f"the hub's catalog went back from {following} to {page['next']}")
            for key in ("subjects", "pipelines", "triggers"):
                catalog[key].extend(page[key])
            if "connections" in page:
                catalog["connections"] = page["connections"]
            following = page.get("next")
        return catalog

    async def list_page(self, *, after: Optional[str] = None, limit: Optional[int] = None) -> Dict[str, Any]:
        """One page of the hub's catalog: the entries after ``after`` (the ``"next"`` of the
        previous page; from the start when ``None``), at most ``limit`` (1-10,000; the
        hub's page size when ``None``). ``"next"``, absent on the last page, is where the
        following page starts."""
        if after is not None and not isinstance(after, str):
            raise HubError(ErrorCode.INVALID_ARGUMENT, "list_page: after must be the next of an earlier page (a string)")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10000):
            raise HubError(ErrorCode.INVALID_ARGUMENT, f"list_page: limit must be an integer from 1 to 10000, got {limit!r}")
        request: Dict[str, Any] = {"op": "list"}
        if after is not None:
            request["after"] = after
        if limit is not None:
            request["limit"] = limit
        answer = await self._core.call(request)
        page = {key: answer.get(key, []) for key in ("subjects", "pipelines", "triggers")}
        for key in ("connections", "next"):
            if key in answer:
                page[key] = answer[key]
        return page

    def subscribe(self, name: Optional[str] = None, *, pipeline: Optional[str] = None, prefetch: int = DEFAULT_PREFETCH,
                  demand: Any = None, buffer: Optional[int] = None, overflow: Optional[str] = None,
                  batch: Optional[bool] = None, since: Optional[Dict[str, Any]] = None) -> Subscription:
        """Subscribes to a subject, named pipeline or trigger (``name``) or to pipeline text (``pipeline=``).

        ``prefetch``: values kept requested ahead of the consumer (0: manual demand
        with ``request(n)``, ``demand`` then being the initial one); ``buffer`` and
        ``overflow``: the hot buffer the hub keeps for it and its policy (error,
        dropOldest, dropNewest, latest). ``since`` (a subject with history):
        ``{"offset": N, "epoch": E}`` (epoch optional) or ``{"last": K}`` starts after
        that offset or with the last K values, then goes on live; if the hub no
        longer holds them, the subscription fails with ``resume_failed``. Must be
        called with the event loop running.
        """
        if (name is None) == (pipeline is None):
            raise HubError(ErrorCode.INVALID_ARGUMENT, "subscribe needs a name or pipeline=, not both")
        target = {"to": name} if name is not None else {"pipeline": pipeline}
        return Subscription(self._core, target, prefetch=prefetch, demand=demand, buffer=buffer,
                            overflow=overflow, batch=batch, since=since)

    async def close(self) -> None:
        """Closes (close 1000); live calls and subscriptions fail with ``closed``."""
        await self._core.close()

    async def __aenter__(self) -> "Hub":
        await self.connect()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<Hub {self.url} {self.state}>"


def _cursor_key(cursor: str) -> Any:
    """Catalog order of a cursor ("s:NAME", "p:NAME", "t:NAME"): subjects, pipelines, triggers, then bytewise names."""
    return ("spt".find(cursor[:1]), cursor[2:].encode())


def _check_urls(urls: Union[str, Sequence[str]]) -> List[str]:
    """One URL, or a non-empty list of them (the nodes of a cluster): each checked."""
    if isinstance(urls, str):
        return [_check_url(urls)]
    if not isinstance(urls, (list, tuple)):
        raise HubError(ErrorCode.INVALID_URL, f"not a URL or a list of URLs: {urls!r}")
    if not urls:
        raise HubError(ErrorCode.INVALID_URL, "no server URL given")
    return [_check_url(url) for url in urls]


def _check_url(url: str) -> str:
    if not isinstance(url, str):
        raise HubError(ErrorCode.INVALID_URL, f"not a valid URL: {url!r}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as error:
        raise HubError(ErrorCode.INVALID_URL, f"not a valid URL: {url} ({error})") from None
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise HubError(ErrorCode.INVALID_URL, f"the URL must be ws://host[:port]/path or wss://…, got {url}")
    return url


class _Core:
    """The connection's state, on the event loop: connect, welcome, reconnect; subscriptions by id; acks."""

    def __init__(self, urls: List[str], token: Optional[str], client: Optional[str], batch: bool,
                 reconnect: Optional[ReconnectPolicy], connect_timeout: float, request_timeout: float) -> None:
        # The servers, tried in turn: the nodes of a cluster (one URL for a lone broker).
        self.urls = urls
        # Which of urls the client uses now.
        self._url_index = 0
        self.token = token
        self.client = client
        self.batch = batch
        self.reconnect = reconnect
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.state = "idle"
        self.session: Optional[str] = None
        self.listeners: Dict[str, List[Callable[..., Any]]] = {"open": [], "disconnect": [], "reconnecting": [], "error": []}
        self._ws: Optional[ClientConnection] = None
        self._outbox: Optional["asyncio.Queue[str]"] = None
        self._writer: Optional["asyncio.Task[None]"] = None
        self._task: Optional["asyncio.Task[None]"] = None
        self._ever_connected = False
        self._attempt = 0
        self._waiting: Dict[int, Callable[[Optional[HubError]], None]] = {}
        self._next_waiting = 1
        self._subscriptions: Dict[int, "weakref.ref[Subscription]"] = {}
        # Subscriptions the hub ended with shutting_down: they resume after the reconnect.
        self._resume_after_loss: List["weakref.ref[Subscription]"] = []
        self._acks: Dict[int, "asyncio.Future[Dict[str, Any]]"] = {}
        self._next_id = 1
        self._next_ack = 1
        self._pending_failure: Optional[HubError] = None
        # Why the last open connection ended (for a request whose connection ended
        # before the request could be queued).
        self._last_loss: Optional[HubError] = None

    @property
    def url(self) -> str:
        """The server the client uses now."""
        return self.urls[self._url_index]

    def _next_url(self) -> None:
        self._url_index = (self._url_index + 1) % len(self.urls)

    def emit(self, event: str, *args: Any) -> None:
        for callback in list(self.listeners[event]):
            try:
                callback(*args)
            except Exception:  # noqa: BLE001 - a listener's bug must not break the connection
                logger.exception("reactive_hub: a %s listener raised", event)

    # ---- Waiting for the connection ----

    def with_connection(self, work: Callable[[Optional[HubError]], None]) -> Optional[int]:
        """Runs ``work(None)`` once open (now if open), or ``work(error)`` if connecting fails; returns a token."""
        if self.state == "open":
            work(None)
            return None
        if self.state == "closed":
            work(HubError(ErrorCode.CLOSED, "the hub client is closed"))
            return None
        token = self._next_waiting
        self._next_waiting += 1
        self._waiting[token] = work
        if self.state == "idle":
            self.state = "connecting"
            self._task = asyncio.get_running_loop().create_task(self._run())
        return token

    def cancel_waiting(self, token: int) -> None:
        self._waiting.pop(token, None)

    def _flush_waiting(self, error: Optional[HubError]) -> None:
        work = list(self._waiting.values())
        self._waiting.clear()
        for run in work:
            run(error)

    async def connection(self) -> None:
        """Returns once open; raises the connection's failure."""
        if self.state == "open":
            return
        future: "asyncio.Future[None]" = asyncio.get_running_loop().create_future()

        def done(error: Optional[HubError]) -> None:
            if future.done():
                return
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)

        token = self.with_connection(done)
        try:
            await future
        finally:
            if token is not None:
                self.cancel_waiting(token)

    # ---- The connection task ----

    async def _run(self) -> None:
        self._attempt = 0
        first_connect_failures = 0  # URLs a first connection tried without success (it tries each once)
        while True:
            self._attempt += 1
            self.state = "connecting"
            self._pending_failure = None
            try:
                ws, session = await self._open()
            except HubError as failure:
                if self.state == "closed":
                    return
                policy = self.reconnect
                auth = failure.code == ErrorCode.UNAUTHORIZED
                tried = self.url
                if len(self.urls) > 1 and not auth:
                    # The next server is tried next; a first connection tries each once at once.
                    self._next_url()
                    if not self._ever_connected:
                        first_connect_failures += 1
                        if first_connect_failures < len(self.urls):
                            continue
                if self._ever_connected and policy is not None and not auth and (
                        policy.max_attempts is None or self._attempt < policy.max_attempts):
                    await self._pause()
                    continue
                reported = failure
                if self._ever_connected and policy is not None and not auth:
                    reported = HubError(
                        ErrorCode.DISCONNECTED,
                        f"gave up reconnecting to {tried} after {self._attempt} attempts: {failure.message}",
                        close_code=failure.close_code)
                self.state = "idle"
                self._attempt = 0
                self._flush_waiting(reported)
                return
            if self.state == "closed":
                await ws.close()
                return
            self._ws = ws
            self.state = "open"
            self._ever_connected = True
            self._attempt = 0
            first_connect_failures = 0
            self.session = session
            outbox: "asyncio.Queue[str]" = asyncio.Queue()
            self._outbox = outbox
            self._writer = asyncio.get_running_loop().create_task(self._write(ws, outbox))
            self.emit("open", session)
            self._flush_waiting(None)
            failure = await self._read(ws)
            self._writer.cancel()
            self._ws = None
            self._last_loss = failure
            self._outbox = None
            if self.state == "closed":
                return
            self.session = None
            self.emit("disconnect", failure)
            reconnecting = self.reconnect is not None and failure.code != ErrorCode.UNAUTHORIZED
            # Before the subscriptions hear of it, so that one that resumes waits for the next connection.
            self.state = "reconnecting" if reconnecting else "idle"
            self._fail_everything(failure, reconnecting)
            if not reconnecting:
                return
            self._attempt = 0
            if len(self.urls) > 1:
                # Another node of the cluster: this one went away (or drains).
                self._next_url()
            await self._pause()

    async def _pause(self) -> None:
        assert self.reconnect is not None
        self.state = "reconnecting"
        delay = self.reconnect.delay(self._attempt + 1)
        self.emit("reconnecting", self._attempt + 1, delay)
        await asyncio.sleep(delay)

    async def _open(self) -> "tuple[ClientConnection, str]":
        """Connects, says hello, waits for welcome; raises a HubError."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.connect_timeout

        def timed_out() -> HubError:
            return HubError(ErrorCode.TIMEOUT, f"connecting to {self.url} timed out after {self.connect_timeout:g} s")

        try:
            ws = await asyncio.wait_for(
                connect(self.url, subprotocols=[SUBPROTOCOL], max_size=None, compression=None,  # type: ignore[list-item]
                        open_timeout=None, close_timeout=2),
                self.connect_timeout)
        except asyncio.TimeoutError:
            raise timed_out() from None
        except (OSError, websockets.InvalidHandshake, websockets.InvalidURI) as error:
            raise HubError(ErrorCode.CONNECTION_FAILED, f"cannot connect to {self.url}: {_describe(error)}") from None
        try:
            if self.token is not None or self.client is not None or self.batch:
                hello: Dict[str, Any] = {"op": "hello"}
                if self.token is not None:
                    hello["token"] = self.token
                if self.client is not None:
                    hello["client"] = self.client
                if self.batch:
                    hello["batch"] = True
                await ws.send(_encode(hello))
            raw = await asyncio.wait_for(ws.recv(), max(0.0, deadline - loop.time()))
            message = json.loads(raw) if isinstance(raw, str) else None
            if not isinstance(message, dict) or message.get("op") != "welcome":
                raise HubError(ErrorCode.PROTOCOL_ERROR, f"expected welcome from {self.url}, got {str(raw)[:200]}")
            return ws, str(message.get("session"))
        except asyncio.TimeoutError:
            await _abort(ws)
            raise timed_out() from None
        except websockets.ConnectionClosed:
            raise self._close_failure(ws) from None
        except (HubError, ValueError) as error:
            await _abort(ws)
            if isinstance(error, HubError):
                raise
            raise HubError(ErrorCode.PROTOCOL_ERROR, f"invalid welcome from {self.url}: {error}") from None

    async def _write(self, ws: ClientConnection, outbox: "asyncio.Queue[str]") -> None:
        try:
            while True:
                await ws.send(await outbox.get())
        except websockets.ConnectionClosed:
            pass

    async def _read(self, ws: ClientConnection) -> HubError:
        """Handles messages until the connection ends; returns why it ended."""
        try:
            async for raw in ws:
                if not isinstance(raw, str):
                    await self._violation("the server sent a binary message", ws)
                    continue
                try:
                    message = json.loads(raw)
                except ValueError as error:
                    await self._violation(f"the server sent invalid JSON: {error}", ws)
                    continue
                if not isinstance(message, dict) or not isinstance(message.get("op"), str):
                    await self._violation(f"the server sent a message without op: {raw[:200]}", ws)
                    continue
                self._handle(message)
        except websockets.ConnectionClosed:
            pass
        return self._close_failure(ws)

    def _close_failure(self, ws: ClientConnection) -> HubError:
        if self._pending_failure is not None:
            failure, self._pending_failure = self._pending_failure, None
            return failure
        code, reason = ws.close_code, ws.close_reason
        if code == 4401:
            return HubError(ErrorCode.UNAUTHORIZED, f"the hub at {self.url} refused the token (close 4401)", close_code=code)
        if code is None or code == 1006:
            return HubError(ErrorCode.DISCONNECTED,
                            f"disconnected from {self.url}: the connection ended without a close frame", close_code=code)
        text = f"disconnected from {self.url}" + (f": {reason} (close {code})" if reason else f" (close {code})")
        return HubError(ErrorCode.DISCONNECTED, text, close_code=code)

    async def _violation(self, text: str, ws: ClientConnection) -> None:
        logger.warning("reactive_hub: protocol error from %s: %s", self.url, text)
        self._pending_failure = HubError(ErrorCode.PROTOCOL_ERROR, f"{text} ({self.url})")
        await ws.close(1008, "protocol error")

    def _handle(self, message: Dict[str, Any]) -> None:
        op = message["op"]
        if op == "subscribed":
            subscription = self._lookup(message.get("id"))
            if subscription is not None:
                subscription._confirmed(message)
        elif op == "next":
            subscription = self._lookup(message.get("id"))
            if subscription is None:
                return
            offset = message.get("offset")
            if not isinstance(offset, int) or isinstance(offset, bool):
                offset = None
            values = message.get("values")
            if isinstance(values, list):
                subscription._deliver_all(values, offset)
            else:
                subscription._deliver(message.get("value"), offset)
        elif op == "complete":
            subscription = self._lookup(message.get("id"))
            self._subscriptions.pop(message.get("id"), None)  # type: ignore[arg-type]
            if subscription is not None:
                subscription._finish()
        elif op == "error":
            error = HubError(str(message.get("code")), str(message.get("message", message.get("code"))),
                             from_server=True, **({"data": message["data"]} if "data" in message else {}))
            if "id" in message:
                subscription = self._lookup(message["id"])
                self._subscriptions.pop(message["id"], None)
                if (subscription is not None and error.code == ErrorCode.SHUTTING_DOWN and self.reconnect is not None
                        and subscription._resume_plan() is not None):
                    # The hub is stopping: this subscription resumes once the client has reconnected.
                    self._resume_after_loss.append(weakref.ref(subscription))
                elif subscription is not None:
                    subscription._fail(error)
            elif "ack" in message:
                future = self._acks.pop(message["ack"], None)
                if future is not None and not future.done():
                    future.set_exception(error)
            else:
                if error.code in (ErrorCode.UNAUTHORIZED, ErrorCode.SHUTTING_DOWN):
                    self._pending_failure = error
                logger.warning("reactive_hub: %s reported %s", self.url, error)
                self.emit("error", error)
        elif op in ("ack", "catalog", "entry"):
            future = self._acks.pop(message.get("ack"), None)  # type: ignore[arg-type]
            if future is not None and not future.done():
                future.set_result(message)
        # welcome again, or a newer server's message: ignored (forward compatibility).

    def _lookup(self, wire_id: Any) -> Optional[Subscription]:
        ref = self._subscriptions.get(wire_id)
        return ref() if ref is not None else None

    def _fail_everything(self, failure: HubError, reconnecting: bool = False) -> None:
        subscriptions = [ref() for ref in self._resume_after_loss] + [ref() for ref in self._subscriptions.values()]
        self._resume_after_loss = []
        self._subscriptions.clear()
        acks = list(self._acks.values())
        self._acks.clear()
        for subscription in subscriptions:
            if subscription is not None:
                subscription._lost(failure, reconnecting)
        for future in acks:
            if not future.done():
                future.set_exception(failure)

    # ---- Outbound ----

    def send_now(self, message: Dict[str, Any]) -> None:
        """Queues ``message`` on the open connection (in order)."""
        if self._outbox is not None:
            self._outbox.put_nowait(_encode(message))

    async def call(self, message: Dict[str, Any]) -> Dict[str, Any]:
        """An acked request: the server's ack or catalog, or its error; bounded by request_timeout."""
        text = _encode(message)  # bad JSON fails now, before any connecting
        loop = asyncio.get_running_loop()

        async def attempt() -> Dict[str, Any]:
            await self.connection()
            if self._outbox is None:
                # The connection opened and ended before this task ran (the hub may close
                # at once, refusing the token): its failure, as requests it held got.
                raise self._last_loss or HubError(ErrorCode.DISCONNECTED, f"the connection to {self.url} ended")
            ack = self._next_ack
            self._next_ack += 1
            future: "asyncio.Future[Dict[str, Any]]" = loop.create_future()
            self._acks[ack] = future
            try:
                self._outbox.put_nowait(f'{text[:-1]},"ack":{ack}}}')
                return await future
            finally:
                self._acks.pop(ack, None)

        try:
            return await asyncio.wait_for(attempt(), self.request_timeout)
        except asyncio.TimeoutError:
            raise HubError(ErrorCode.TIMEOUT, f"no answer from {self.url} within {self.request_timeout:g} s") from None

    def register(self, subscription: Subscription, target: Dict[str, Any], demand: Any, options: Dict[str, Any]) -> None:
        """Gives a subscription its wire id and sends its ``subscribe``."""
        wire_id = self._next_id
        self._next_id += 1
        subscription.id = wire_id
        self._subscriptions[wire_id] = weakref.ref(subscription)
        subscription._finalizer = weakref.finalize(subscription, self._abandon, wire_id)
        message: Dict[str, Any] = {"op": "subscribe", "id": wire_id, **target, "demand": demand}
        for key, value in options.items():
            if value is not None:
                message[key] = value
        self.send_now(message)

    def request_more(self, subscription: Subscription, n: Any) -> None:
        if self.state == "open" and self._lookup(subscription.id) is subscription:
            self.send_now({"op": "request", "id": subscription.id, "n": UNLIMITED if n == UNLIMITED else n})

    def cancel_subscription(self, subscription: Subscription) -> None:
        if self.state == "open" and self._lookup(subscription.id) is subscription:
            self.send_now({"op": "cancel", "id": subscription.id})
        self.forget(subscription)

    def forget(self, subscription: Subscription) -> None:
        if subscription.id is not None and self._lookup(subscription.id) is subscription:
            del self._subscriptions[subscription.id]

    def _abandon(self, wire_id: int) -> None:
        """A subscription nobody holds any more: cancel it on the hub."""
        if self._subscriptions.pop(wire_id, None) is not None and self.state == "open":
            try:
                self.send_now({"op": "cancel", "id": wire_id})
            except RuntimeError:
                pass  # the event loop is gone

    # ---- Closing ----

    async def close(self) -> None:
        if self.state != "closed":
            self.state = "closed"
            self.session = None
            error = HubError(ErrorCode.CLOSED, "the hub client is closed")
            self._flush_waiting(error)
            self._fail_everything(error)
            ws = self._ws
            if ws is not None:
                try:
                    await ws.close(1000)
                except Exception:  # noqa: BLE001 - closing an already broken connection
                    pass
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def _abort(ws: ClientConnection) -> None:
    try:
        await ws.close()
    except Exception:  # noqa: BLE001
        pass


def _describe(error: BaseException) -> str:
    if isinstance(error, ConnectionRefusedError) or "Connect call failed" in str(error):
        return "connection refused"
    return str(error) or type(error).__name__
