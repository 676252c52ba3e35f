#!/usr/bin/env python3
"""Tests the dashboard in headless Chromium against a real broker.

Usage: run_dashboard.py [--hubcli PATH] [--chromium PATH] [--screenshot PNG]

Starts `hubcli serve` (an open broker, and one that requires a token), opens the
dashboard the broker serves (http://127.0.0.1:PORT/dashboard/) in Chromium and drives
it over the DevTools protocol with the JS client's driver (clients/js/test/run_browser.py:
Broker, Chromium, Page), checking through the DOM: the connection, the catalog with a
subject's state and rates, a live tail receiving values, the pipeline playground's
values and its error with a caret under the column, connections and events, and the
token form of a broker with auth.

With --screenshot PNG, it instead takes a picture of the dashboard at work with
Chromium's own --screenshot (for README).

Prints one line per check and ends with "dashboard: N passed, N failed"; exits 1 if any failed.
"""
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPOSITORY, "clients", "js", "test"))

import websockets  # noqa: E402
from run_browser import Broker, Chromium, browser_arguments, report  # noqa: E402  (the one DevTools driver)

TOKEN = "dashboard-test-token"


async def send(url, name, values, token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with websockets.connect(url, subprotocols=["hub.v1"], additional_headers=headers) as ws:
        json.loads(await ws.recv())
        for index, value in enumerate(values, 1):
            await ws.send(json.dumps({"op": "send", "to": name, "value": value, "ack": index}))
            answer = json.loads(await ws.recv())
            assert answer == {"op": "ack", "ack": index}, answer


def texts(selector):
    return f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent)"


async def checks(browser, broker, auth_broker):
    results = []
    page = await browser.open_page(f"http://127.0.0.1:{broker.port}/dashboard/")

    async def check(name, body):
        try:
            await body()
            results.append((name, None))
        except Exception as error:  # noqa: BLE001 - reported as a failed check
            results.append((name, f"{type(error).__name__}: {error}"))

    async def connected():
        await page.wait_for("document.querySelector('#status').textContent === 'connected'", "the dashboard connects")

    async def catalog():
        await send(broker.url, "prices", [1, 2])
        await send(broker.url, "done", [1])
        async with websockets.connect(broker.url, subprotocols=["hub.v1"]) as ws:
            json.loads(await ws.recv())
            await ws.send(json.dumps({"op": "complete", "to": "done", "ack": 1}))
            json.loads(await ws.recv())
        await page.wait_for(f"{texts('#catalog td.name')}.includes('prices')", "prices in the catalog")
        await page.wait_for(
            "[...document.querySelectorAll('#catalog tr')].some(r => r.cells[0].textContent === 'done' && r.cells[2].textContent === 'completed')",
            "the completed subject's state")
        await page.wait_for("/connections/.test(document.querySelector('#summary').textContent)", "the stats summary")

    async def live_tail():
        await page.evaluate("""(() => {
            const form = document.querySelector('#tail-form');
            form.elements.name.value = 'prices';
            form.querySelector('button').click();
        })()""")
        await page.wait_for("document.querySelector('#tail-status').textContent === 'tailing prices…'", "the tail starts")
        # The tail's subscription is live once the hub counts it.
        for _ in range(200):
            async with websockets.connect(broker.url, subprotocols=["hub.v1"]) as ws:
                json.loads(await ws.recv())
                await ws.send(json.dumps({"op": "list", "ack": 1}))
                catalog = json.loads(await ws.recv())
            if any(s["name"] == "prices" and s["subscribers"] >= 1 for s in catalog["subjects"]):
                break
            await asyncio.sleep(0.05)
        await send(broker.url, "prices", [{"bid": 101.5}, {"bid": 102}, {"bid": 99.25}])
        await page.wait_for(
            f"JSON.stringify({texts('#tail li')}) === JSON.stringify(['{{\"bid\":99.25}}', '{{\"bid\":102}}', '{{\"bid\":101.5}}'])",
            "three values in the tail, newest first")
        # The catalog counts the tail as a subscriber of prices (its next refresh).
        await page.wait_for(
            "[...document.querySelectorAll('#catalog tr')].some(r => r.cells[0].textContent === 'prices' && Number(r.cells[3].textContent) >= 1)",
            "the tail counted in the catalog's subscribers")

    async def playground_values():
        await page.evaluate("""(() => {
            const form = document.querySelector('#playground-form');
            form.elements.pipeline.value = 'sequence([1, 2, 3]) | map(. * 10)';
            form.querySelector('button').click();
        })()""")
        await page.wait_for(f"JSON.stringify({texts('#playground-values li')}) === '[\"10\",\"20\",\"30\"]'", "the pipeline's values")
        await page.wait_for("document.querySelector('#playground-status').textContent === 'completed after 3 values'", "completion")

    async def playground_error():
        await page.evaluate("""(() => {
            const form = document.querySelector('#playground-form');
            form.elements.pipeline.value = 'sequence([1, 2]) | mapp(.)';
            form.querySelector('button').click();
        })()""")
        await page.wait_for("!document.querySelector('#playground-error').hidden", "the error box")
        await page.wait_for("document.querySelector('#playground-error .caret') !== null", "a caret")
        shown = await page.evaluate("document.querySelector('#playground-error .source').textContent")
        message = await page.evaluate("document.querySelector('#playground-error .message').textContent")
        line, caret = shown.split("\n")
        assert line == "sequence([1, 2]) | mapp(.)", shown
        assert message.startswith("pipeline_error: "), message
        assert caret.index("^") == line.index("mapp"), f"the caret is under column {caret.index('^') + 1}: {shown!r}"

    async def connections_and_events():
        await page.wait_for("document.querySelectorAll('#connections tbody tr').length >= 1", "a connection row")
        await page.wait_for(f"{texts('#events li')}.some(t => / connect /.test(t))", "a connect event")

    async def token_form():
        second = await browser.open_page(f"http://127.0.0.1:{auth_broker.port}/dashboard/")
        try:
            await second.wait_for("!document.querySelector('#login').hidden", "the token form of a broker with auth")
            await second.evaluate(f"""(() => {{
                const form = document.querySelector('#login');
                form.elements.token.value = {json.dumps(TOKEN)};
                form.querySelector('button').click();
            }})()""")
            await second.wait_for("document.querySelector('#status').textContent === 'connected'", "connected with the token")
            await second.wait_for("/connections/.test(document.querySelector('#summary').textContent)", "its stats")
        finally:
            await second.close()

    await check("dashboard: connects to the broker that serves it", connected)
    await check("dashboard: catalog with a subject's state and the stats summary", catalog)
    await check("dashboard: a live tail shows the values as they arrive", live_tail)
    await check("dashboard: the playground shows a pipeline's values", playground_values)
    await check("dashboard: the playground shows a pipeline error with a caret under its column", playground_error)
    await check("dashboard: connections and events", connections_and_events)
    await check("dashboard: a broker with auth asks for the token", token_form)
    if any(error for _, error in results) and page.console:
        print("dashboard console:\n  " + "\n  ".join(page.console[-20:]))
    await page.close()
    return results


def screenshot(args):
    """A picture of the dashboard at work: a broker, a publisher, Chromium's --screenshot."""
    config = tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False)
    config.write("subjects:\n  prices: {kind: currentValue, initial: {bid: 100}}\n  orders:\ntriggers: [refresh]\n"
                 "pipelines:\n  bigOrders: orders | filter(.qty > 100)\n")
    config.close()
    broker = Broker(args.hubcli, config.name)
    stop = threading.Event()

    def publish():
        async def run():
            async with websockets.connect(broker.url, subprotocols=["hub.v1"]) as ws:
                json.loads(await ws.recv())
                await ws.send(json.dumps({"op": "hello", "client": "ticker"}))
                n = 0
                while not stop.is_set():
                    n += 1
                    if n % 20 == 0:  # a short visit: connect and disconnect events
                        async with websockets.connect(broker.url, subprotocols=["hub.v1"]) as visitor:
                            json.loads(await visitor.recv())
                            await visitor.send(json.dumps({"op": "trigger", "name": "refresh", "ack": 1}))
                            json.loads(await visitor.recv())
                    await ws.send(json.dumps({"op": "send", "to": "prices", "value": {"bid": round(100 + (n % 17) * 0.25, 2)}}))
                    await ws.send(json.dumps({"op": "send", "to": "orders", "value": {"id": n, "qty": (n * 37) % 250}}))
                    await asyncio.sleep(0.05)
        asyncio.run(run())

    thread = threading.Thread(target=publish, daemon=True)
    thread.start()
    try:
        time.sleep(2.5)
        pipeline = "orders | filter(.qty > 200) | map(.qty)"
        url = f"http://127.0.0.1:{broker.port}/dashboard/#tail=prices&pipeline={pipeline.replace(' ', '%20').replace('|', '%7C')}"
        profile = tempfile.mkdtemp(prefix="hub-shot-")
        subprocess.run(
            [args.chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={profile}", "--window-size=1400,900", "--virtual-time-budget=6000",
             f"--screenshot={os.path.abspath(args.screenshot)}", url],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        print(f"dashboard: screenshot written to {args.screenshot}")
    finally:
        stop.set()
        thread.join(10)
        broker.stop()
        os.unlink(config.name)
    return 0


async def run(args):
    auth_config = tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False)
    auth_config.write(f"auth:\n  tokens: [{TOKEN}]\n")
    auth_config.close()
    brokers = []
    try:
        broker = Broker(args.hubcli)
        brokers.append(broker)
        auth_broker = Broker(args.hubcli, auth_config.name)
        brokers.append(auth_broker)
        browser = Chromium(args.chromium)
        try:
            await browser.connect()
            results = await checks(browser, broker, auth_broker)
        finally:
            await browser.close()
    finally:
        for broker in brokers:
            broker.stop()
        os.unlink(auth_config.name)
    return report("dashboard", results)


def main():
    parser = browser_arguments(__doc__.splitlines()[0])
    parser.add_argument("--screenshot")
    args = parser.parse_args()
    if args.screenshot:
        return screenshot(args)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
