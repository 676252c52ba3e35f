"""The Python client against a real broker: calls, subscriptions, demand, errors."""
import asyncio
import gc
import itertools
import json
import uuid

import pytest
import websockets

from conftest import TOKEN
from reactive_hub import ErrorCode, Hub, HubError, ReconnectPolicy

_counter = itertools.count()


def unique(prefix="s"):
    return f"{prefix}_{uuid.uuid4().hex[:10]}_{next(_counter)}"


async def take(subscription, count):
    values = []
    async for value in subscription:
        values.append(value)
        if len(values) == count:
            return values
    raise AssertionError(f"the subscription ended after {len(values)} of {count} values")


class Recording:
    """Records what the client sends, by wrapping the real connection's send."""

    def __init__(self, hub):
        self.sent = []
        core = hub._core
        original = core.send_now

        def send_now(message):
            self.sent.append(json.loads(json.dumps(message)))
            original(message)

        core.send_now = send_now


async def test_send_and_subscribe_in_order(broker):
    async with Hub(broker.url) as hub:
        name = unique()
        subscription = hub.subscribe(name, prefetch=4)
        assert await subscription.subscribed() == "subject"
        values = [1, "two", {"three": [3]}, None, False, 9223372036854775807, -9223372036854775808, 1.5]
        for value in values:
            await hub.send(name, value)
        assert await take(subscription, len(values)) == values
        assert subscription.delivered == len(values)
        subscription.cancel()


async def test_complete_ends_iteration_and_completed_is_the_hubs(broker):
    async with Hub(broker.url) as hub:
        name = unique()
        subscription = hub.subscribe(name)
        await subscription.subscribed()
        await hub.send(name, 1)
        await hub.complete(name)
        assert [value async for value in subscription] == [1]
        await subscription.done()
        with pytest.raises(HubError) as caught:
            await hub.send(name, 2)
        assert caught.value.code == ErrorCode.COMPLETED and caught.value.from_server


async def test_fail_raises_failed_with_the_error_value(broker):
    async with Hub(broker.url) as hub:
        name = unique()
        subscription = hub.subscribe(name)
        await subscription.subscribed()
        await hub.fail(name, {"reason": "feed down"})
        with pytest.raises(HubError) as caught:
            await subscription.__anext__()
        assert caught.value.code == ErrorCode.FAILED
        assert caught.value.data == {"reason": "feed down"}
        with pytest.raises(StopAsyncIteration):
            await subscription.__anext__()
        with pytest.raises(HubError):
            await subscription.done()


async def test_trigger_with_and_without_key(broker):
    async with Hub(broker.url) as hub:
        name = unique("t")
        keyed = hub.subscribe(pipeline=f'trigger({name}, "page2")')
        assert await keyed.subscribed() == "pipeline"  # creates the trigger
        everything = hub.subscribe(name)
        assert await everything.subscribed() == "trigger"
        await hub.trigger(name)
        await hub.trigger(name, "page2")
        assert await take(everything, 2) == [None, "page2"]
        assert await take(keyed, 1) == ["page2"]
        subject = unique()
        await hub.send(subject, 1)
        with pytest.raises(HubError) as caught:
            await hub.trigger(subject)
        assert caught.value.code == ErrorCode.NOT_FOUND


async def test_list_answers_the_catalog(broker):
    async with Hub(broker.url) as hub:
        name = unique()
        async with hub.subscribe(name) as subscription:
            await subscription.subscribed()
            catalog = await hub.list()
            assert {"name": name, "kind": "passthrough", "subscribers": 1, "state": "open"} in catalog["subjects"]
            assert isinstance(catalog["pipelines"], list) and isinstance(catalog["triggers"], list)
        after = await hub.list()
        assert next(s for s in after["subjects"] if s["name"] == name)["subscribers"] == 0


async def test_get_reads_one_key_of_a_table(conformance_broker):
    # Protocol/conformance/hub.yml declares the table subject conformance_table.
    async with Hub(conformance_broker.url) as hub:
        key = unique("k")
        assert await hub.get("conformance_table", key) is None
        await hub.send("conformance_table", {"key": key, "value": {"n": 1}})
        assert await hub.get("conformance_table", key) == {"n": 1}
        await hub.send("conformance_table", {"key": key, "value": None})
        assert await hub.get("conformance_table", key) is None
        with pytest.raises(HubError) as refused:
            await hub.send("conformance_table", {"key": key})
        assert refused.value.code == ErrorCode.INVALID_VALUE
        with pytest.raises(HubError) as not_a_table:
            await hub.get(unique(), "a")
        assert not_a_table.value.code == ErrorCode.NOT_FOUND
        with pytest.raises(HubError) as bad_key:
            await hub.get("conformance_table", ["a"])
        assert bad_key.value.code == ErrorCode.INVALID_ARGUMENT


async def test_list_pages_the_catalog(broker):
    async with Hub(broker.url) as hub:
        base = unique()
        names = [f"{base}_{i}" for i in range(5)]
        for name in names:
            await hub.send(name, 1)
        first = await hub.list_page(after=f"s:{base}", limit=2)
        assert [s["name"] for s in first["subjects"]] == names[:2]
        assert first["next"] == f"s:{names[1]}"
        second = await hub.list_page(after=first["next"], limit=2)
        assert [s["name"] for s in second["subjects"]] == names[2:4]
        whole = await hub.list()
        assert "next" not in whole
        listed = [s["name"] for s in whole["subjects"]]
        assert [n for n in listed if n.startswith(base)] == names
        with pytest.raises(HubError) as caught:
            await hub.list_page(limit=0)
        assert caught.value.code == ErrorCode.INVALID_ARGUMENT
        with pytest.raises(HubError) as caught:
            await hub._core.call({"op": "list", "after": "nonsense"})
        assert caught.value.code == ErrorCode.BAD_MESSAGE


async def test_pipeline_error_carries_its_position(broker):
    async with Hub(broker.url) as hub:
        subscription = hub.subscribe(pipeline="sequence([1, 2")
        with pytest.raises(HubError) as caught:
            await subscription.subscribed()
        assert caught.value.code == ErrorCode.PIPELINE_ERROR
        assert caught.value.data == {"line": 1, "column": 15}
        with pytest.raises(HubError):
            await subscription.__anext__()


async def test_anext_is_demand_half_a_window_at_a_time(broker):
    async with Hub(broker.url) as hub:
        recording = Recording(hub)
        subscription = hub.subscribe(pipeline="sequence([1,2,3,4,5,6,7,8,9,10])", prefetch=4)
        seen = []
        async for value in subscription:
            seen.append(value)
            assert subscription.requested - len(seen) <= 4
        assert seen == list(range(1, 11))
        subscribe = next(m for m in recording.sent if m["op"] == "subscribe" and m["id"] == subscription.id)
        assert subscribe["demand"] == 4
        requests = [m["n"] for m in recording.sent if m["op"] == "request" and m["id"] == subscription.id]
        assert len(requests) >= 3 and all(n == 2 for n in requests), requests


async def test_prefetch_zero_is_manual_demand(broker):
    async with Hub(broker.url) as hub:
        subscription = hub.subscribe(pipeline="sequence([1, 2, 3])", prefetch=0)
        await subscription.subscribed()
        await hub.list()  # a round trip: a cold sequence without demand sends nothing
        assert subscription.delivered == 0
        subscription.request(2)
        assert await take(subscription, 2) == [1, 2]
        await hub.list()  # the sequence answers a request at once: 3 would be here by now
        assert subscription.delivered == 2
        subscription.request(1)
        assert [value async for value in subscription] == [3]
        initial = hub.subscribe(pipeline="sequence([7, 8])", prefetch=0, demand=1)
        assert await take(initial, 1) == [7]
        await hub.list()
        assert initial.delivered == 1
        initial.cancel()


async def test_a_stalled_consumer_holds_the_hub_back(broker):
    """Back pressure: without __anext__ calls the client asks for nothing more, the hub's buffer overflows."""
    async with Hub(broker.url) as hub:
        name = unique()
        subscription = hub.subscribe(name, prefetch=4, buffer=8, overflow="error")
        await subscription.subscribed()
        for i in range(40):
            await hub.send(name, i)
        received = []
        with pytest.raises(HubError) as caught:
            async for value in subscription:
                received.append(value)
        assert caught.value.code == ErrorCode.OVERFLOW
        assert received == list(range(len(received))) and len(received) <= 4 + 8


async def test_dropping_a_subscription_cancels_it(broker):
    async with Hub(broker.url) as hub:
        recording = Recording(hub)
        text = "sequence([1, 2, 3])"
        async for value in hub.subscribe(pipeline=text, prefetch=1):
            assert value == 1
            break  # the subscription is dropped here
        gc.collect()
        wire = next(m["id"] for m in recording.sent if m["op"] == "subscribe" and m.get("pipeline") == text)
        assert {"op": "cancel", "id": wire} in recording.sent, recording.sent

        name = unique()
        subscription = hub.subscribe(name)
        await subscription.subscribed()
        wire = subscription.id
        del subscription
        gc.collect()
        assert {"op": "cancel", "id": wire} in recording.sent
        catalog = await hub.list()
        assert next(s for s in catalog["subjects"] if s["name"] == name)["subscribers"] == 0


class Received:
    """Records the ``next`` messages the client receives, by wrapping the real core's handler."""

    def __init__(self, hub):
        self.nexts = []
        core = hub._core
        original = core._handle

        def handle(message):
            if message.get("op") == "next":
                self.nexts.append(message)
            original(message)

        core._handle = handle


async def buffered_then_taken(hub, name, count, **options):
    """Subscribes without demand, sends ``count`` values (the hub buffers them), then asks for
    them all at once: a batching hub may send them in few messages. Returns what iteration gave."""
    subscription = hub.subscribe(name, prefetch=0, **options)
    await subscription.subscribed()
    for value in range(count):
        await hub.send(name, {"n": value})
    subscription.request(count)
    values = [await subscription.__anext__() for _ in range(count)]
    subscription.cancel()
    return values


async def test_batch_is_the_default_and_is_flattened_in_order(broker):
    async with Hub(broker.url) as hub:
        received = Received(hub)
        name = unique()
        assert await buffered_then_taken(hub, name, 50) == [{"n": n} for n in range(50)]
        assert all("values" in m and "value" not in m for m in received.nexts)
        assert sum(len(m["values"]) for m in received.nexts) == 50
        assert len(received.nexts) < 50  # several values in a message
        assert [v async for v in hub.subscribe(pipeline="sequence([1,2,3,4,5,6])", prefetch=6)] == [1, 2, 3, 4, 5, 6]


async def test_batch_false_keeps_the_plain_form(broker):
    async with Hub(broker.url, batch=False) as hub:
        received = Received(hub)
        assert await buffered_then_taken(hub, unique(), 20) == [{"n": n} for n in range(20)]
        assert len(received.nexts) == 20 and all("value" in m and "values" not in m for m in received.nexts)
    async with Hub(broker.url) as hub:
        received = Received(hub)
        # A subscription's own batch=False wins over the connection's default.
        assert await buffered_then_taken(hub, unique(), 20, batch=False) == [{"n": n} for n in range(20)]
        assert len(received.nexts) == 20 and all("value" in m for m in received.nexts)


async def test_a_batch_on_a_subject_with_history_carries_each_values_offset(conformance_broker):
    async with Hub(conformance_broker.url) as hub:
        received = Received(hub)
        name = unique()
        subscription = hub.subscribe(name, prefetch=0)
        await subscription.subscribed()
        for value in range(10):
            await hub.send(name, value)
        subscription.request(10)
        offsets = []
        for expected in range(10):
            assert await subscription.__anext__() == expected
            offsets.append(subscription.last_offset)
        assert offsets == list(range(1, 11))
        assert any(len(m.get("values", [])) > 1 for m in received.nexts)


async def test_a_consumer_that_falls_behind_holds_the_values_not_the_hubs_buffer(broker):
    """The default window takes a subject's values off the hub while the consumer is busy:
    more values than the hub's buffer holds for it arrive without an overflow."""
    async with Hub(broker.url) as hub:
        name = unique()
        subscription = hub.subscribe(name, buffer=10)
        await subscription.subscribed()
        for value in range(200):
            await hub.send(name, value)  # nothing consumed yet: 20 times the hub's buffer
        assert await take(subscription, 200) == list(range(200))


async def test_hello_auth(auth_broker):
    async with Hub(auth_broker.url, token=TOKEN) as hub:
        name = unique()
        await hub.send(name, 1)
        assert any(s["name"] == name for s in (await hub.list())["subjects"])
    for token in ("wrong", None):
        hub = Hub(auth_broker.url, token=token)
        with pytest.raises(HubError) as caught:
            await hub.list()
        assert caught.value.code == ErrorCode.UNAUTHORIZED
        await hub.close()


async def test_bad_arguments_fail_at_once(broker):
    for bad in ("http://127.0.0.1:1/", "not a url", "ws://:99999/"):
        with pytest.raises(HubError) as caught:
            Hub(bad)
        assert caught.value.code == ErrorCode.INVALID_URL
    async with Hub(broker.url) as hub:
        with pytest.raises(HubError) as caught:
            await hub.send("x", float("nan"))
        assert caught.value.code == ErrorCode.INVALID_ARGUMENT
        with pytest.raises(HubError) as caught:
            await hub.send("x", object())
        assert caught.value.code == ErrorCode.INVALID_ARGUMENT
        subscription = hub.subscribe(unique(), prefetch=0)
        for n in (0, -1, 1.5, "lots", None, True):
            with pytest.raises(HubError) as caught:
                subscription.request(n)
            assert caught.value.code == ErrorCode.INVALID_DEMAND
        with pytest.raises(HubError):
            hub.subscribe(unique(), overflow="sometimes")
        with pytest.raises(HubError):
            hub.subscribe(unique(), pipeline="sequence([1])")
        with pytest.raises(HubError) as caught:
            await hub.send("bad name!", 1)
        assert caught.value.code == ErrorCode.BAD_MESSAGE and "name" in caught.value.message


async def test_close_fails_everything_with_closed(broker):
    hub = Hub(broker.url)
    subscription = hub.subscribe(unique())
    await subscription.subscribed()
    assert hub.state == "open" and isinstance(hub.session, str)
    await hub.close()
    assert hub.state == "closed"
    for action in (subscription.__anext__(), hub.send("x", 1), hub.subscribe("x").subscribed()):
        with pytest.raises(HubError) as caught:
            await action
        assert caught.value.code == ErrorCode.CLOSED


async def test_a_cancelled_wait_keeps_the_subscription(broker):
    """asyncio.wait_for around __anext__ times out without ending the subscription."""
    async with Hub(broker.url) as hub:
        name = unique()
        subscription = hub.subscribe(name)
        await subscription.subscribed()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(subscription.__anext__(), 0.05)
        await hub.send(name, "later")
        assert await take(subscription, 1) == ["later"]


async def test_an_invalid_server_message_is_a_protocol_error():
    """A server that speaks something else: protocol_error, and the connection is closed."""

    async def handler(ws):
        await ws.send(json.dumps({"op": "welcome", "protocol": 1, "server": "fake", "session": "x"}))
        await ws.recv()
        await ws.send("this is not JSON")
        await ws.wait_closed()

    async with websockets.serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        hub = Hub(f"ws://127.0.0.1:{port}/", reconnect=None)
        with pytest.raises(HubError) as caught:
            await hub.list()
        assert caught.value.code == ErrorCode.PROTOCOL_ERROR
        await hub.close()


def test_reconnect_delays_grow_to_the_cap():
    policy = ReconnectPolicy(initial_delay=0.1, multiplier=2, max_delay=1.0, jitter=0)
    assert [policy.delay(n) for n in range(1, 7)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    jittered = ReconnectPolicy(initial_delay=1.0, jitter=0.5)
    assert all(0.5 <= jittered.delay(1) <= 1.0 for _ in range(100))
