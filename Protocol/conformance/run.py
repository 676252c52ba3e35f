#!/usr/bin/env python3
"""Runs the conformance vectors of the Reactive Hub protocol against a server.

Usage: run.py --url ws://127.0.0.1:7420 [--timeout S] [--schema FILE] [VECTOR.json ...]
With no vector given, runs every file in the vectors/ folder beside this script.
With --schema (or when ../schema/hub-v1.schema.json exists and the jsonschema
package is installed), every message the server sends is also validated against
the schema's serverMessage definition.
Prints one line per vector and ends with "N passed, N failed".
"""
import argparse
import asyncio
import json
import os
import sys
import uuid

import websockets

MISSING = object()


class Mismatch(Exception):
    pass


def substitute(node, uid):
    if isinstance(node, str):
        return node.replace("{{uid}}", uid)
    if isinstance(node, list):
        return [substitute(x, uid) for x in node]
    if isinstance(node, dict):
        return {substitute(k, uid): substitute(v, uid) for k, v in node.items()}
    return node


TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def equal(pattern, value, path):
    """Exact comparison with the $any / $type markers."""
    if pattern == "$any":
        return
    if isinstance(pattern, dict) and set(pattern) == {"$contains"}:
        if not isinstance(value, list):
            raise Mismatch(f"{path}: expected an array, got {json.dumps(value)}")
        for item in pattern["$contains"]:
            for element in value:
                try:
                    if isinstance(item, dict) and isinstance(element, dict):
                        match(item, element)
                    else:
                        equal(item, element, path)
                    break
                except Mismatch:
                    continue
            else:
                raise Mismatch(f"{path}: no element matches {json.dumps(item)} in {json.dumps(value)}")
        return
    if isinstance(pattern, dict) and set(pattern) == {"$type"}:
        if not TYPES[pattern["$type"]](value):
            raise Mismatch(f"{path}: expected a {pattern['$type']}, got {json.dumps(value)}")
        return
    if isinstance(pattern, bool) or isinstance(value, bool):
        if pattern is not value and pattern != value or type(pattern) is not type(value):
            raise Mismatch(f"{path}: expected {json.dumps(pattern)}, got {json.dumps(value)}")
        return
    if isinstance(pattern, (int, float)) and isinstance(value, (int, float)):
        if pattern != value:
            raise Mismatch(f"{path}: expected {json.dumps(pattern)}, got {json.dumps(value)}")
        return
    if isinstance(pattern, dict):
        if not isinstance(value, dict) or set(pattern) != set(value):
            raise Mismatch(f"{path}: expected {json.dumps(pattern)}, got {json.dumps(value)}")
        for key in pattern:
            equal(pattern[key], value[key], f"{path}.{key}")
        return
    if isinstance(pattern, list):
        if not isinstance(value, list) or len(pattern) != len(value):
            raise Mismatch(f"{path}: expected {json.dumps(pattern)}, got {json.dumps(value)}")
        for i, (p, v) in enumerate(zip(pattern, value)):
            equal(p, v, f"{path}[{i}]")
        return
    if pattern != value or type(pattern) is not type(value):
        raise Mismatch(f"{path}: expected {json.dumps(pattern)}, got {json.dumps(value)}")


def match(pattern, message):
    """Top-level subset match of a message against a pattern."""
    if not isinstance(message, dict):
        raise Mismatch(f"expected an object, got {json.dumps(message)}")
    for key, expected in pattern.items():
        actual = message.get(key, MISSING)
        if expected == "$absent":
            if actual is not MISSING:
                raise Mismatch(f"{key}: expected absent, got {json.dumps(actual)}")
            continue
        if actual is MISSING:
            raise Mismatch(f"{key}: missing in {json.dumps(message)}")
        equal(expected, actual, key)


SERVER_SCHEMA = None


def load_schema(path):
    """The validator of server messages, or None when jsonschema is not installed."""
    try:
        import jsonschema
    except ImportError:
        return None
    with open(path, encoding="utf-8") as handle:
        schema = json.load(handle)
    root = dict(schema)
    root["oneOf"] = [{"$ref": "#/$defs/serverMessage"}]
    return jsonschema.Draft202012Validator(root)


class Connection:
    def __init__(self, ws):
        self.ws = ws

    async def next_message(self, timeout):
        try:
            raw = await asyncio.wait_for(self.ws.recv(), timeout)
        except asyncio.TimeoutError:
            raise Mismatch(f"no message within {timeout:.1f}s")
        except websockets.ConnectionClosed as closed:
            raise Mismatch(f"connection closed ({closed.rcvd.code if closed.rcvd else 'no close frame'})")
        if isinstance(raw, bytes):
            raise Mismatch(f"binary message from the server: {raw[:40]!r}")
        message = json.loads(raw)
        if SERVER_SCHEMA is not None:
            errors = sorted(SERVER_SCHEMA.iter_errors(message), key=lambda e: e.path)
            if errors:
                raise Mismatch(f"server message violates the schema: {errors[0].message} in {raw[:200]}")
        return message


async def run_vector(url, vector, timeout):
    uid = uuid.uuid4().hex[:12]
    vector = substitute(vector, uid)
    conns = {}

    async def open_conn(name, step=None):
        step = step or {}
        ws = await websockets.connect(
            url,
            subprotocols=step.get("subprotocols", ["hub.v1"]) or None,
            additional_headers=step.get("headers"),
            max_size=None,
            open_timeout=timeout,
            compression=None,
        )
        conn = Connection(ws)
        conns[name] = conn
        if "expectSubprotocol" in step and ws.subprotocol != step["expectSubprotocol"]:
            raise Mismatch(f"expected subprotocol {step['expectSubprotocol']!r}, got {ws.subprotocol!r}")
        if step.get("expectWelcome", True):
            welcome = await conn.next_message(timeout)
            match({"op": "welcome", "protocol": 1, "server": {"$type": "string"},
                   "session": {"$type": "string"}}, welcome)
        return conn

    async def conn_for(step):
        name = step.get("conn", "a")
        if name not in conns:
            await open_conn(name)
        return conns[name]

    try:
        for index, step in enumerate(vector["steps"]):
            where = f"step {index + 1}"
            try:
                if "open" in step:
                    await open_conn(step["open"], step)
                elif "send" in step:
                    await (await conn_for(step)).ws.send(json.dumps(step["send"]))
                elif "sendPadded" in step:
                    message = dict(step["sendPadded"])
                    message[step.get("field", "value")] = "x" * step["bytes"]
                    await (await conn_for(step)).ws.send(json.dumps(message))
                elif "sendRaw" in step:
                    await (await conn_for(step)).ws.send(step["sendRaw"])
                elif "sendBinary" in step:
                    await (await conn_for(step)).ws.send(bytes.fromhex(step["sendBinary"]))
                elif "sendFragmented" in step:
                    text = json.dumps(step["sendFragmented"])
                    count = max(1, step.get("fragments", 2))
                    size = max(1, -(-len(text) // count))
                    parts = [text[i:i + size] for i in range(0, len(text), size)]
                    await (await conn_for(step)).ws.send(iter(parts))
                elif "expect" in step:
                    message = await (await conn_for(step)).next_message(timeout)
                    match(step["expect"], message)
                elif "expectUnordered" in step:
                    conn = await conn_for(step)
                    pending = list(step["expectUnordered"])
                    for _ in range(len(pending)):
                        message = await conn.next_message(timeout)
                        for i, pattern in enumerate(pending):
                            try:
                                match(pattern, message)
                            except Mismatch:
                                continue
                            del pending[i]
                            break
                        else:
                            raise Mismatch(f"unexpected {json.dumps(message)}; still expecting {json.dumps(pending)}")
                elif "expectNone" in step:
                    conn = await conn_for(step)
                    try:
                        raw = await asyncio.wait_for(conn.ws.recv(), step["expectNone"] / 1000)
                        raise Mismatch(f"expected no message, got {raw if isinstance(raw, str) else raw[:40]!r}")
                    except asyncio.TimeoutError:
                        pass
                elif "expectClose" in step:
                    conn = await conn_for(step)
                    try:
                        raw = await asyncio.wait_for(conn.ws.recv(), timeout)
                        raise Mismatch(f"expected close {step['expectClose']}, got {raw if isinstance(raw, str) else raw[:40]!r}")
                    except websockets.ConnectionClosed as closed:
                        code = closed.rcvd.code if closed.rcvd else None
                        if code != step["expectClose"]:
                            raise Mismatch(f"expected close {step['expectClose']}, got {code}")
                    except asyncio.TimeoutError:
                        raise Mismatch(f"expected close {step['expectClose']}, still open after {timeout}s")
                elif "close" in step:
                    await (await conn_for(step)).ws.close(step["close"])
                elif "sleep" in step:
                    await asyncio.sleep(step["sleep"] / 1000)
                else:
                    raise Mismatch(f"unknown step {json.dumps(step)}")
            except Mismatch as mismatch:
                raise Mismatch(f"{where}: {mismatch}")
    finally:
        for conn in conns.values():
            try:
                await conn.ws.close()
            except Exception:
                pass


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="ws://127.0.0.1:7420")
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--schema", help="JSON Schema of the messages (default: ../schema/hub-v1.schema.json)")
    parser.add_argument("vectors", nargs="*")
    args = parser.parse_args()
    global SERVER_SCHEMA
    here = os.path.dirname(os.path.abspath(__file__))
    schema_path = args.schema or os.path.join(here, "..", "schema", "hub-v1.schema.json")
    if os.path.exists(schema_path):
        SERVER_SCHEMA = load_schema(schema_path)
        if SERVER_SCHEMA is None and args.schema:
            print("run.py: --schema needs the jsonschema package (pip install jsonschema)", file=sys.stderr)
            return 2
    paths = args.vectors
    if not paths:
        folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors")
        paths = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".json"))
    passed = failed = 0
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            vector = json.load(handle)
        name = vector.get("name", os.path.basename(path))
        try:
            await run_vector(args.url, vector, args.timeout)
        except Mismatch as mismatch:
            failed += 1
            print(f"FAIL {name}: {mismatch}")
        except (OSError, websockets.InvalidHandshake) as error:
            failed += 1
            print(f"FAIL {name}: cannot talk to {args.url}: {error}")
        else:
            passed += 1
            print(f"PASS {name}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
