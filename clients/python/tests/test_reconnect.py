"""Connection loss, reconnection with back-off, giving up, timeouts (brokers the tests stop)."""
import asyncio
import signal
import socket

import pytest

from reactive_hub import ErrorCode, Hub, HubError, ReconnectPolicy


def record(hub):
    events = []
    for name in ("open", "disconnect", "reconnecting"):
        hub.on(name, lambda *args, name=name: events.append((name, args)))
    return events


async def disconnected(hub, events):
    """Until the hub has heard its connection close: a stopped broker's exit can be seen before its close reaches the client."""
    if any(name == "disconnect" for name, _ in events):
        return
    heard = asyncio.get_running_loop().create_future()
    hub.on("disconnect", lambda *args: heard.done() or heard.set_result(None))
    await heard


async def stopped(broker, sig):
    await asyncio.get_running_loop().run_in_executor(None, broker.stop, sig)


async def started(broker):
    await asyncio.get_running_loop().run_in_executor(None, broker.start)


async def test_a_broker_restart(own_broker):
    """Subscriptions fail (shutting_down, then disconnected); the hub reconnects; waiting calls go through."""
    hub = Hub(own_broker.url, reconnect=ReconnectPolicy(initial_delay=0.05, max_delay=0.4), request_timeout=60)
    events = record(hub)
    try:
        first = hub.subscribe("prices")
        await first.subscribed()
        first_session = hub.session

        await stopped(own_broker, signal.SIGTERM)  # a clean stop: shutting_down, close 1001
        with pytest.raises(HubError) as caught:
            await first.__anext__()
        assert caught.value.code == ErrorCode.SHUTTING_DOWN and caught.value.from_server
        await disconnected(hub, events)
        waiting = asyncio.ensure_future(hub.send("prices", "after restart"))  # waits for the next connection
        await started(own_broker)
        await waiting
        assert hub.session and hub.session != first_session

        second = hub.subscribe("prices")
        await second.subscribed()
        await stopped(own_broker, signal.SIGKILL)  # an abrupt end: no close frame
        with pytest.raises(HubError) as caught:
            await second.__anext__()
        assert caught.value.code == ErrorCode.DISCONNECTED
        assert f"127.0.0.1:{own_broker.port}" in caught.value.message
        await started(own_broker)
        third = hub.subscribe("prices")
        await third.subscribed()
        await hub.send("prices", 3)
        assert await third.__anext__() == 3

        names = [name for name, _ in events]
        assert names.count("open") == 3 and names.count("disconnect") == 2 and "reconnecting" in names, names
        assert all(0 <= args[1] <= 0.4 for name, args in events if name == "reconnecting")
    finally:
        await hub.close()


async def test_reconnecting_gives_up_after_max_attempts(own_broker):
    hub = Hub(own_broker.url, reconnect=ReconnectPolicy(initial_delay=0.02, max_delay=0.04, max_attempts=3),
              request_timeout=60)
    events = record(hub)
    lost = asyncio.Event()
    hub.on("disconnect", lambda error: lost.set())
    try:
        await hub.connect()
        await stopped(own_broker, signal.SIGKILL)
        await lost.wait()
        with pytest.raises(HubError) as caught:
            await hub.send("x", 1)
        assert caught.value.code == ErrorCode.DISCONNECTED
        assert "gave up reconnecting" in caught.value.message and "3 attempts" in caught.value.message
        assert [name for name, _ in events].count("reconnecting") == 3
        assert hub.state == "idle"
    finally:
        await hub.close()


async def test_the_first_connection_is_not_retried():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    hub = Hub(f"ws://127.0.0.1:{port}/")
    with pytest.raises(HubError) as caught:
        await hub.send("x", 1)
    assert caught.value.code == ErrorCode.CONNECTION_FAILED
    assert f"127.0.0.1:{port}" in caught.value.message and "refused" in caught.value.message
    assert hub.state == "idle"
    await hub.close()


async def test_a_hub_that_never_answers_times_out():
    connections = []

    async def silent(reader, writer):
        connections.append(writer)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    hub = Hub(f"ws://127.0.0.1:{port}/", connect_timeout=0.3)
    try:
        with pytest.raises(HubError) as caught:
            await hub.connect()
        assert caught.value.code == ErrorCode.TIMEOUT and "timed out" in caught.value.message
    finally:
        await hub.close()
        for writer in connections:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_history_resumes_across_restarts(tmp_path):
    """A subscription to a subject with history resumes after the reconnect (a durable subject
    across kill -9) within its demand, with offsets; one in memory fails with resume_failed."""
    from conftest import Broker

    config = tmp_path / "hub.yml"
    config.write_text(
        f"storage: {{path: {tmp_path / 'data'}}}\n"
        "subjects:\n  orders: {durable: true, history: {size: 1000}}\n  scratch: {history: {size: 100}}\n")
    broker = await asyncio.get_running_loop().run_in_executor(None, Broker, str(config))
    hub = Hub(broker.url, reconnect=ReconnectPolicy(initial_delay=0.05, max_delay=0.4), request_timeout=60)
    try:
        orders = hub.subscribe("orders", prefetch=0, demand=2)
        scratch = hub.subscribe("scratch", prefetch=0, demand="unlimited")
        await orders.subscribed()
        await scratch.subscribed()
        assert isinstance(orders.epoch, str) and orders.start_offset == 0
        for value in (1, 2, 3):
            await hub.send("orders", value)
        await hub.send("scratch", "a")
        assert [await orders.__anext__(), await orders.__anext__()] == [1, 2]
        assert orders.last_offset == 2
        assert await scratch.__anext__() == "a"
        epoch = orders.epoch

        await stopped(broker, signal.SIGKILL)
        await started(broker)
        await hub.send("orders", 4)  # waits for the reconnection
        orders.request(5)  # the demand still unmet was 0
        assert [await orders.__anext__(), await orders.__anext__()] == [3, 4]
        assert orders.last_offset == 4 and orders.epoch == epoch
        with pytest.raises(HubError) as caught:
            await scratch.__anext__()
        assert caught.value.code == ErrorCode.RESUME_FAILED and "values were missed" in str(caught.value)

        last = hub.subscribe("orders", since={"last": 2})
        assert [await last.__anext__(), await last.__anext__()] == [3, 4] and last.recovered is True
        after = hub.subscribe("orders", since={"offset": 1, "epoch": epoch})
        assert [await after.__anext__() for _ in range(3)] == [2, 3, 4]
        gone = hub.subscribe("orders", since={"offset": 1, "epoch": "another"})
        with pytest.raises(HubError) as caught:
            await gone.__anext__()
        assert caught.value.code == ErrorCode.RESUME_FAILED
        with pytest.raises(HubError) as caught:
            hub.subscribe(pipeline="orders", since={"last": 1})
        assert caught.value.code == ErrorCode.INVALID_ARGUMENT
        with pytest.raises(HubError) as caught:
            hub.subscribe("orders", since={"offset": -1})
        assert caught.value.code == ErrorCode.INVALID_ARGUMENT
    finally:
        await hub.close()
        broker.stop(signal.SIGKILL)


# ---- Several URLs: the nodes of a cluster ----

def free_url():
    """A URL where nothing listens (a port bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"ws://127.0.0.1:{probe.getsockname()[1]}/"


async def test_several_urls_the_first_connection_uses_the_one_that_answers(broker):
    dead = free_url()
    hub = Hub([dead, broker.url], reconnect=ReconnectPolicy(initial_delay=0.05, max_delay=0.4))
    try:
        assert hub.urls == [dead, broker.url]
        assert hub.url == dead  # before connecting
        await hub.send("several_urls", 1)
        assert hub.url == broker.url and hub.state == "open"
    finally:
        await hub.close()


async def test_several_urls_all_failing_report_the_last_failure():
    first, second = free_url(), free_url()
    hub = Hub([first, second])
    with pytest.raises(HubError) as caught:
        await hub.connect()
    assert caught.value.code == ErrorCode.CONNECTION_FAILED
    assert second.rstrip("/") in caught.value.message, caught.value.message
    assert hub.state == "idle"
    await hub.close()


async def test_several_urls_a_lost_node_moves_the_hub_to_the_next(own_broker, broker):
    """Connected to A (own_broker), A is killed: the hub reconnects to B (broker) and a send goes through there."""
    hub = Hub([own_broker.url, broker.url], reconnect=ReconnectPolicy(initial_delay=0.05, max_delay=0.4),
              request_timeout=60)
    events = record(hub)
    watcher = Hub(broker.url)
    try:
        live = hub.subscribe("moving")
        await live.subscribed()
        assert hub.url == own_broker.url
        first_session = hub.session
        on_b = watcher.subscribe("moving")
        await on_b.subscribed()

        await stopped(own_broker, signal.SIGKILL)
        with pytest.raises(HubError) as caught:  # no history: it fails as on a lone broker
            await live.__anext__()
        assert caught.value.code == ErrorCode.DISCONNECTED
        await hub.send("moving", "after the loss")  # waits for the reconnection, to B
        assert await on_b.__anext__() == "after the loss"
        assert hub.url == broker.url and hub.session and hub.session != first_session
        names = [name for name, _ in events]
        assert names.count("open") == 2 and names.count("disconnect") == 1, names
    finally:
        await hub.close()
        await watcher.close()


async def test_several_urls_an_invalid_one_is_refused_naming_it(broker):
    for bad in ("http://127.0.0.1:1/", "not a url", "ws://:99999/"):
        with pytest.raises(HubError) as caught:
            Hub([broker.url, bad])
        assert caught.value.code == ErrorCode.INVALID_URL
        assert bad in caught.value.message, caught.value.message
    with pytest.raises(HubError) as caught:
        Hub([])
    assert caught.value.code == ErrorCode.INVALID_URL and "no server URL" in caught.value.message
