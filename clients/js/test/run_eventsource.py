#!/usr/bin/env python3
"""An EventSource in headless Chromium on a durable subject, across a broker restart.

Usage: run_eventsource.py [--hubcli PATH] [--chromium PATH]

Starts `hubcli serve` with a durable subject `orders` (SQLite, history), opens a page of
the broker's own origin (its /dashboard/) in Chromium, and there a plain browser
`EventSource` on /v1/subjects/orders/events. Values are published with HTTP POSTs; the
broker is stopped (SIGTERM) and started again on the same port while values keep being
published: the EventSource reconnects by itself with the Last-Event-ID of the last value
it got, and the page must end with every value once, in order, with no `reset`. Then
the same with `kill -9` (the subject is `sync: full`: an acknowledged value survives).
Last, on a broker that requires tokens: an EventSource without one is refused for good,
and one of a page that holds the `hub_token` cookie gets the values.

Prints one line per check and ends with "eventsource: N passed, N failed"; exits 1 if any failed.
"""
import asyncio
import json
import os
import signal
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from run_browser import Broker, Chromium, browser_arguments, report  # noqa: E402  (the one DevTools driver)


def post(port, name, value, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/subjects/{name}", data=json.dumps(value).encode(),
        headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


OPEN = """(() => {
    window.got = []; window.ids = []; window.resets = []; window.opens = 0;
    const source = new EventSource("/v1/subjects/orders/events");
    source.onopen = () => { window.opens += 1; };
    source.onmessage = (event) => { window.got.push(JSON.parse(event.data)); window.ids.push(event.lastEventId); };
    source.addEventListener("reset", (event) => window.resets.push(event.data));
    window.source = source;
    return true;
})()"""


async def run(args):
    results = []
    storage = tempfile.mkdtemp(prefix="hub-eventsource-")
    config = os.path.join(storage, "hub.yml")
    with open(config, "w") as f:
        f.write(f"storage:\n  path: {storage}/data\n  sync: full\n"
                "subjects:\n  orders:\n    durable: true\n    history:\n      size: 10000\n")
    broker = Broker(args.hubcli, config)
    browser = Chromium(args.chromium)
    try:
        await browser.connect()
        page = await browser.open_page(f"http://127.0.0.1:{broker.port}/dashboard/")
        await page.evaluate(OPEN)
        published = []

        async def publish(count):
            for _ in range(count):
                value = {"n": len(published) + 1}
                answer = await asyncio.to_thread(post, broker.port, "orders", value)
                assert "offset" in answer, answer
                published.append(value)

        async def check(name, body):
            try:
                await body()
                results.append((name, None))
            except Exception as error:  # noqa: BLE001 (reported, not raised)
                results.append((name, f"{type(error).__name__}: {error}"))

        async def everything_once():
            await page.wait_for(f"window.got.length >= {len(published)}", f"{len(published)} values", timeout_ms=60000)
            state = await page.evaluate("JSON.stringify({got: window.got, resets: window.resets, ids: window.ids})")
            state = json.loads(state)
            assert state["got"] == published, f"received {state['got']}, published {published}"
            assert state["resets"] == [], f"resets: {state['resets']}"
            offsets = [int(i.split("@")[0]) for i in state["ids"]]
            assert offsets == list(range(1, len(published) + 1)), f"ids {state['ids']}"

        async def live():
            await page.wait_for("window.opens >= 1", "the stream opens")
            await publish(5)
            await everything_once()

        async def across(stop_signal):
            opens = await page.evaluate("window.opens")
            await publish(3)
            broker.stop(stop_signal)
            broker.start(broker.port)
            # Published while the EventSource is still waiting to reconnect: it must get
            # them from the history, after the last id it saw.
            await publish(4)
            await page.wait_for(f"window.opens > {opens}", "the EventSource reconnects", timeout_ms=60000)
            await publish(3)
            await everything_once()

        await check("eventsource: live values, each with its OFFSET@EPOCH id", live)
        await check("eventsource: resumes by itself across a restart (SIGTERM), nothing lost or repeated",
                    lambda: across(signal.SIGTERM))
        await check("eventsource: resumes by itself across kill -9 (sync: full), nothing lost or repeated",
                    lambda: across(signal.SIGKILL))
        if any(error for _, error in results) and page.console:
            print("page console:\n  " + "\n  ".join(page.console[-20:]))
        await page.close()
        await check("eventsource: on a broker with tokens, refused without one, served with the hub_token cookie",
                    lambda: cookie(args, browser, storage))
    finally:
        await browser.close()
        broker.stop()
    return report("eventsource", results)


COOKIE_CONFIG = """auth:
  identities:
    reader: {tokens: [reader-secret], subscribe: [news]}
    writer: {tokens: [writer-secret], publish: [news]}
"""

WATCH = """((name) => {
    window[name] = {got: [], opens: 0, errors: 0, state: -1};
    const source = new EventSource("/v1/subjects/news/events");
    source.onopen = () => { window[name].opens += 1; };
    source.onmessage = (event) => { window[name].got.push(JSON.parse(event.data)); };
    source.onerror = () => { window[name].errors += 1; window[name].state = source.readyState; };
    return true;
})"""


async def cookie(args, browser, storage):
    """An EventSource sends the page's cookies: the broker takes the hub_token cookie as
    the stream's bearer token (and refuses a stream without any token, for good)."""
    config = os.path.join(storage, "auth.yml")
    with open(config, "w") as f:
        f.write(COOKIE_CONFIG)
    broker = Broker(args.hubcli, config)
    try:
        page = await browser.open_page(f"http://127.0.0.1:{broker.port}/dashboard/")
        await page.evaluate(f"{WATCH}('without')")
        # A refusal before the stream (401) is an error the EventSource does not retry.
        await page.wait_for("window.without.errors >= 1 && window.without.state === 2", "the refusal", timeout_ms=30000)
        await page.evaluate('document.cookie = "hub_token=reader-secret; path=/v1/; SameSite=Strict"')
        await page.evaluate(f"{WATCH}('withCookie')")
        await page.wait_for("window.withCookie.opens >= 1", "the stream with the cookie opens", timeout_ms=30000)
        sent = [{"n": n} for n in range(1, 4)]
        for value in sent:
            await asyncio.to_thread(post, broker.port, "news", value, "writer-secret")
        await page.wait_for("window.withCookie.got.length >= 3", "3 values", timeout_ms=30000)
        got = json.loads(await page.evaluate("JSON.stringify(window.withCookie.got)"))
        assert got == sent, f"received {got}, published {sent}"
        without = json.loads(await page.evaluate("JSON.stringify(window.without)"))
        assert without["opens"] == 0 and without["got"] == [], f"the stream without a token: {without}"
        await page.close()
    finally:
        broker.stop()


def main():
    return asyncio.run(run(browser_arguments(__doc__.splitlines()[0]).parse_args()))


if __name__ == "__main__":
    sys.exit(main())
