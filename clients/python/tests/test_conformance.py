"""The Protocol/conformance vectors through the Python client's API.

A vector scripts raw protocol messages; here each client message becomes the
API call that sends it (subscribe with manual demand, request, cancel, send,
complete, fail, trigger, list, hello as Hub arguments), and what the API
reports becomes the server message a vector expects: a subscription's
confirmation, values, completion and failure, a call's result or HubError
(under the vector's own ack number). Patterns are matched with run.py's own
matcher. The API orders what each source reports (a subscription's values and
end; its confirmation; one call) but not one source against another, so an expectation takes the first
unmatched event of its own source, and `expectNone` requires that none is left.
A vector that needs what the API cannot express (raw text, invalid fields, a
duplicate live id, closes, subprotocols) is skipped with the reason.
"""
import asyncio
import importlib.util
import json
import os
import uuid

import pytest

from conftest import REPOSITORY
from reactive_hub import Hub

spec = importlib.util.spec_from_file_location("conformance_run", os.path.join(REPOSITORY, "Protocol", "conformance", "run.py"))
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)

FOLDER = os.path.join(REPOSITORY, "Protocol", "conformance", "vectors")
VECTORS = sorted(f for f in os.listdir(FOLDER) if f.endswith(".json"))
MAX_ID = 2**53 - 1
OVERFLOW = {"error", "dropOldest", "dropNewest", "latest"}
EXPECTED_OPS = {"subscribed", "next", "complete", "error", "ack", "catalog"}
FIELDS = {
    "subscribe": {"op", "id", "to", "pipeline", "demand", "buffer", "overflow", "batch"},
    "request": {"op", "id", "n"},
    "cancel": {"op", "id"},
    "send": {"op", "to", "value", "ack"},
    "complete": {"op", "to", "ack"},
    "fail": {"op", "to", "error", "ack"},
    "trigger": {"op", "name", "key", "ack"},
    "list": {"op", "ack"},
    "delete": {"op", "name", "ack"},
    "hello": {"op", "token", "client", "batch"},
}


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def unsupported(message, live, held, started):
    op = message.get("op")
    if op not in FIELDS:
        return f"op {op!r} is not in the API"
    extra = set(message) - FIELDS[op]
    if extra:
        return f"fields the API does not send: {', '.join(sorted(extra))}"
    if "ack" in message and not (is_int(message["ack"]) and abs(message["ack"]) <= MAX_ID):
        return "an ack that is not an integer"
    if op == "hello":
        return "hello after other messages" if started else None
    if op == "subscribe":
        sid, to, pipeline = message.get("id"), message.get("to"), message.get("pipeline")
        if not is_int(sid) or not 1 <= sid <= MAX_ID:
            return "an id the API would not choose"
        if sid in live:
            return "a live id subscribed again"
        if isinstance(to, str) == isinstance(pipeline, str) or (to is not None and not isinstance(to, str)):
            return "not exactly one of to/pipeline"
        demand = message.get("demand")
        if demand is not None and demand != "unlimited" and not (is_int(demand) and demand >= 0):
            return "an invalid demand"
        if "buffer" in message and not (is_int(message["buffer"]) and message["buffer"] >= 1):
            return "an invalid buffer"
        if "overflow" in message and message["overflow"] not in OVERFLOW:
            return "an invalid overflow"
        if "batch" in message and not isinstance(message["batch"], bool):
            return "an invalid batch"
        return None
    if op == "request":
        if message.get("id") not in held:
            return "a request for an id the API does not hold"
        n = message.get("n", None)
        if n != "unlimited" and not (is_int(n) and n >= 1):
            return "an invalid n (the API refuses it locally)"
        return None
    if op == "cancel":
        return None if message.get("id") in held else "a cancel for an id the API does not hold"
    if op == "delete":
        return None if isinstance(message.get("name"), str) else "a delete without a name"
    if op in ("send", "complete", "fail"):
        if not isinstance(message.get("to"), str):
            return f"a {op} without a name"
        if op == "send" and "value" not in message or op == "fail" and "error" not in message:
            return f"a {op} the API cannot express"
        return None
    if op == "trigger":
        return None if isinstance(message.get("name"), str) else "a trigger without a name"
    if op == "list":
        return None if "ack" in message else "a list without ack"
    return None


def inapplicable(vector):
    started, live, held = set(), {}, {}
    for index, step in enumerate(vector["steps"]):
        where = f"step {index + 1}"
        conn = step.get("conn", "a")
        kind = next(k for k in step if k not in ("conn", "field", "bytes"))
        ids = live.setdefault(conn, set())
        known = held.setdefault(conn, set())
        if kind in ("send", "sendPadded"):
            message = step["send"] if kind == "send" else {**step["sendPadded"], step.get("field", "value"): ""}
            reason = unsupported(message, ids, known, conn in started)
            if reason:
                return f"{where}: {reason}"
            if message["op"] == "subscribe":
                ids.add(message["id"])
                known.add(message["id"])
        elif kind in ("expect", "expectUnordered"):
            for pattern in [step["expect"]] if kind == "expect" else step["expectUnordered"]:
                if pattern.get("op") not in EXPECTED_OPS:
                    return f"{where}: the API does not surface a server {pattern.get('op')!r}"
                if pattern["op"] == "next" and pattern.get("values", "$absent") != "$absent":
                    return f"{where}: the API flattens batches"
                if pattern["op"] in ("complete", "error") and "id" in pattern:
                    ids.discard(pattern["id"])
        elif kind not in ("expectNone", "sleep"):
            return f"{where}: {kind!r} is below the API"
        started.add(conn)
    return None


def source_of(message):
    present = lambda key: key in message and message[key] != "$absent"  # noqa: E731
    if message["op"] in ("ack", "catalog") or (message["op"] == "error" and present("ack")):
        return f"ack {json.dumps(message['ack'])}"
    if message["op"] == "error" and not present("id"):
        return "calls"
    if message["op"] == "subscribed":
        return f"confirmation {json.dumps(message.get('id'))}"
    return f"subscription {json.dumps(message.get('id'))}"


class EventLog:
    """What the API reported on one connection, as the server messages they stand for."""

    def __init__(self):
        self.events = []
        self.changed = asyncio.Event()

    def push(self, event):
        self.events.append(event)
        self.changed.set()

    async def take(self, sources, timeout):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            for index, event in enumerate(self.events):
                if source_of(event) in sources:
                    return self.events.pop(index)
            left = deadline - loop.time()
            if left <= 0:
                raise run.Mismatch(f"nothing from {' or '.join(sources)} within {timeout} s; other events: {self.events}")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def none(self, ms):
        await asyncio.sleep(ms / 1000)
        if self.events:
            raise run.Mismatch(f"expected nothing, got {self.events[0]}")


def error_event(error, extra):
    event = {"op": "error", "code": error.code, "message": error.message, **extra}
    if error.has_data:
        event["data"] = error.data
    return event


async def run_vector(vector, url, timeout=10.0):
    vector = run.substitute(vector, uuid.uuid4().hex[:12])
    conns = {}
    tasks = []

    def conn_for(step):
        name = step.get("conn", "a")
        if name not in conns:
            hello = step["send"] if step.get("send", {}).get("op") == "hello" else {}
            hub = Hub(url, token=hello.get("token"), client=hello.get("client"), batch=bool(hello.get("batch")),
                      reconnect=None, connect_timeout=timeout, request_timeout=timeout)
            conns[name] = {"hub": hub, "log": EventLog(), "subs": {}}
        return conns[name]

    def call(conn, coroutine, ack, catalog=False):
        extra = {} if ack is None else {"ack": ack}

        async def outcome():
            try:
                result = await coroutine
            except Exception as error:  # noqa: BLE001 - a HubError, reported as the server's error
                conn["log"].push(error_event(error, extra))
                return
            if ack is not None:
                conn["log"].push({"op": "catalog", "ack": ack, **result} if catalog else {"op": "ack", "ack": ack})

        tasks.append(asyncio.ensure_future(outcome()))

    def subscribe(conn, message):
        sid = message["id"]
        target = {"pipeline": message["pipeline"]} if "pipeline" in message else {"name": message["to"]}
        subscription = conn["hub"].subscribe(**target, prefetch=0, demand=message.get("demand", 0),
                                             buffer=message.get("buffer"), overflow=message.get("overflow"),
                                             batch=message.get("batch"))
        entry = {"subscription": subscription, "cancelled": False}
        conn["subs"][sid] = entry

        async def confirmed():
            try:
                kind = await subscription.subscribed()
            except Exception:  # noqa: BLE001 - the failure is reported by the iteration
                return
            conn["log"].push({"op": "subscribed", "id": sid, "kind": kind})

        async def values():
            try:
                async for value in subscription:
                    conn["log"].push({"op": "next", "id": sid, "value": value})
            except Exception as error:  # noqa: BLE001
                conn["log"].push(error_event(error, {"id": sid}))
                return
            if not entry["cancelled"]:
                conn["log"].push({"op": "complete", "id": sid})

        tasks.append(asyncio.ensure_future(confirmed()))
        tasks.append(asyncio.ensure_future(values()))

    def send(conn, message):
        hub, op = conn["hub"], message["op"]
        if op == "hello":
            return
        if op == "subscribe":
            subscribe(conn, message)
        elif op == "request":
            conn["subs"][message["id"]]["subscription"].request(message["n"])
        elif op == "cancel":
            entry = conn["subs"][message["id"]]
            entry["cancelled"] = True
            entry["subscription"].cancel()
        elif op == "send":
            call(conn, hub.send(message["to"], message["value"]), message.get("ack"))
        elif op == "complete":
            call(conn, hub.complete(message["to"]), message.get("ack"))
        elif op == "fail":
            call(conn, hub.fail(message["to"], message["error"]), message.get("ack"))
        elif op == "delete":
            call(conn, hub.delete(message["name"]), message.get("ack"))
        elif op == "trigger":
            coroutine = hub.trigger(message["name"], message["key"]) if "key" in message else hub.trigger(message["name"])
            call(conn, coroutine, message.get("ack"))
        elif op == "list":
            call(conn, hub.list(), message.get("ack"), catalog=True)

    try:
        for index, step in enumerate(vector["steps"]):
            try:
                conn = conn_for(step)
                if "send" in step:
                    send(conn, step["send"])
                elif "sendPadded" in step:
                    send(conn, {**step["sendPadded"], step.get("field", "value"): "x" * step["bytes"]})
                elif "expect" in step:
                    run.match(step["expect"], await conn["log"].take([source_of(step["expect"])], timeout))
                elif "expectUnordered" in step:
                    pending = list(step["expectUnordered"])
                    while pending:
                        event = await conn["log"].take([source_of(p) for p in pending], timeout)
                        for i, pattern in enumerate(pending):
                            try:
                                run.match(pattern, event)
                            except run.Mismatch:
                                continue
                            del pending[i]
                            break
                        else:
                            raise run.Mismatch(f"unexpected {event}; still expecting {pending}")
                elif "expectNone" in step:
                    await conn["log"].none(step["expectNone"])
                elif "sleep" in step:
                    await asyncio.sleep(step["sleep"] / 1000)
            except run.Mismatch as mismatch:
                raise run.Mismatch(f"step {index + 1}: {mismatch}") from None
    finally:
        for conn in conns.values():
            await conn["hub"].close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def load(file):
    with open(os.path.join(FOLDER, file), encoding="utf-8") as handle:
        return json.load(handle)


@pytest.mark.parametrize("file", VECTORS)
async def test_vector(broker, file):
    vector = load(file)
    reason = inapplicable(vector)
    if reason:
        pytest.skip(reason)
    await run_vector(vector, broker.url)
