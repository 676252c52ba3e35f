#!/usr/bin/env python3
"""Runs the JS client's tests in headless Chromium against real brokers.

Usage: run_browser.py [--hubcli PATH] [--chromium PATH]

Starts three `hubcli serve` (an open one, one that requires a token, and the
tutorial's docs/tutorial-todo/hub.yml), serves the repository over HTTP on
127.0.0.1, starts Chromium headless and drives it over the DevTools protocol:

1. clients/js/test/browser.html runs the shared cases (cases.js) and the
   conformance vectors through the client (conformance.js) in the page;
2. the tutorial's page (docs/tutorial-todo/index.html) is used as a person
   would: add, remove, a value sent from outside, a second page joining late,
   and a broker restart; everything is checked through the page's DOM.

Prints one line per test and ends with "chromium: N passed, N failed, N skipped";
exits 1 if any failed.
"""
import argparse
import asyncio
import functools
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import websockets

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
TOKEN = "browser-test-token"


class Broker:
    """A `hubcli serve` process on 127.0.0.1."""

    def __init__(self, hubcli, config=None, port=0):
        self.hubcli, self.config = hubcli, config
        self.start(port)

    def start(self, port):
        args = [self.hubcli, "serve", "--host", "127.0.0.1", "--port", str(port)]
        if self.config:
            args += ["--config", self.config]
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            self.log.seek(0)
            text = self.log.read().decode(errors="replace")
            found = re.search(r"hubcli: listening on (ws://\S+)", text)
            if found:
                self.url = found.group(1)
                self.port = int(self.url.rsplit(":", 1)[1].strip("/"))
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"the broker exited ({self.process.returncode}):\n{text}")
            time.sleep(0.05)
        raise RuntimeError("the broker did not start within 60 s")

    def stop(self, sig=signal.SIGTERM):
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def restart(self):
        self.stop()
        self.start(self.port)


def serve_http(config):
    """The repository over HTTP, plus /__config.json; returns (server, base URL)."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".js": "text/javascript"}

        def do_GET(self):
            if self.path == "/__config.json":
                body = json.dumps(config).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=REPOSITORY))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


class Chromium:
    """Headless Chromium and one DevTools protocol connection to it."""

    def __init__(self, executable):
        self.profile = tempfile.mkdtemp(prefix="hub-chromium-")
        self.process = subprocess.Popen(
            [executable, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.stderr = []
        threading.Thread(target=self._drain, daemon=True).start()
        self.next_id = 0
        self.pending = {}
        self.listeners = []

    def _drain(self):
        for line in self.process.stderr:
            self.stderr.append(line.decode(errors="replace"))

    async def connect(self):
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + 60
        while not os.path.exists(port_file) or len(open(port_file).read().split()) < 2:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited ({self.process.returncode}):\n{''.join(self.stderr[-30:])}")
            if time.monotonic() > deadline:
                raise RuntimeError("chromium did not open its DevTools port within 60 s")
            await asyncio.sleep(0.05)
        port, path = open(port_file).read().split()[:2]
        self.ws = await websockets.connect(f"ws://127.0.0.1:{port}{path}", max_size=None)
        self.reader = asyncio.create_task(self._read())

    async def _read(self):
        async for raw in self.ws:
            message = json.loads(raw)
            if "id" in message and message["id"] in self.pending:
                self.pending.pop(message["id"]).set_result(message)
            else:
                for listener in self.listeners:
                    listener(message)

    async def send(self, method, params=None, session=None, timeout=120):
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        await self.ws.send(json.dumps(message))
        answer = await asyncio.wait_for(future, timeout)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    async def open_page(self, url):
        """A new tab at `url`, loaded; returns a Page."""
        target = (await self.send("Target.createTarget", {"url": "about:blank"}))["targetId"]
        session = (await self.send("Target.attachToTarget", {"targetId": target, "flatten": True}))["sessionId"]
        page = Page(self, target, session)
        self.listeners.append(page.on_event)
        await self.send("Page.enable", session=session)
        await self.send("Runtime.enable", session=session)
        loaded = asyncio.get_running_loop().create_future()
        page.load_waiters.append(loaded)
        await self.send("Page.navigate", {"url": url}, session=session)
        await asyncio.wait_for(loaded, 60)
        return page

    async def close(self):
        try:
            await self.send("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser, target, session):
        self.browser, self.target, self.session = browser, target, session
        self.console = []
        self.load_waiters = []

    def on_event(self, message):
        if message.get("sessionId") != self.session:
            return
        method, params = message.get("method"), message.get("params", {})
        if method == "Page.loadEventFired":
            for waiter in self.load_waiters:
                if not waiter.done():
                    waiter.set_result(True)
            self.load_waiters = []
        elif method == "Runtime.consoleAPICalled":
            self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.console.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")

    async def evaluate(self, expression, timeout=120):
        result = await self.browser.send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            session=self.session, timeout=timeout)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise AssertionError(details.get("exception", {}).get("description") or details.get("text"))
        return result["result"].get("value")

    async def wait_for(self, condition, what, timeout_ms=20000):
        """Polls the JS `condition` in the page until it is truthy."""
        ok = await self.evaluate(f"""(async () => {{
            const end = Date.now() + {timeout_ms};
            while (Date.now() < end) {{
                if ({condition}) return true;
                await new Promise((resolve) => setTimeout(resolve, 25));
            }}
            return false;
        }})()""")
        if not ok:
            state = await self.evaluate("document.querySelector('#status')?.textContent + ' | ' + "
                                        "JSON.stringify([...document.querySelectorAll('#todos li')].map(li => li.textContent))")
            raise AssertionError(f"{what}: not within {timeout_ms} ms (page shows: {state}; console: {self.console[-5:]})")

    async def close(self):
        await self.browser.send("Target.closeTarget", {"targetId": self.target})


TODOS = "JSON.stringify([...document.querySelectorAll('#todos li')].map(li => [li.dataset.id, li.firstChild.textContent]))"


async def tutorial_checks(browser, base, tutorial):
    """The tutorial's page, used as a person would; yields (name, error or None)."""
    page_url = f"{base}/docs/tutorial-todo/index.html?hub={tutorial.url}"
    page = await browser.open_page(page_url)
    results = []

    async def check(name, body):
        try:
            await body()
            results.append((name, None))
        except Exception as error:  # noqa: BLE001 - reported as a failed check
            results.append((name, f"{type(error).__name__}: {error}"))

    def shows(expected):
        return f"{TODOS} === {json.dumps(json.dumps(expected, separators=(',', ':')))}"

    async def add(title):
        await page.evaluate(f"""(() => {{
            const form = document.querySelector('#add');
            form.elements.title.value = {json.dumps(title)};
            form.querySelector('button').click();
        }})()""")

    async def appears():
        await page.wait_for("document.querySelector('#status').textContent === '0 to do'", "the page asks for the content")

    async def add_and_remove():
        await add("Buy milk")
        await page.wait_for(shows([["1", "Buy milk"]]), "Buy milk is listed")
        await add("Walk the dog")
        await page.wait_for(shows([["1", "Buy milk"], ["2", "Walk the dog"]]), "two todos")
        await page.evaluate("document.querySelector('#todos li[data-id=\"1\"] button.remove').click()")
        await page.wait_for(shows([["2", "Walk the dog"]]), "todo 1 removed")
        await page.wait_for("document.querySelector('#status').textContent === '1 to do'", "the count")

    async def live_from_outside():
        async with websockets.connect(tutorial.url, subprotocols=["hub.v1"]) as ws:
            json.loads(await ws.recv())  # welcome
            await ws.send(json.dumps({"op": "send", "to": "input", "ack": 1,
                                      "value": {"type": "todoAdded", "title": "From the shell"}}))
            answer = json.loads(await ws.recv())
            assert answer == {"op": "ack", "ack": 1}, answer
        await page.wait_for(shows([["2", "Walk the dog"], ["3", "From the shell"]]), "the todo sent from outside")

    async def late_page():
        second = await browser.open_page(page_url)
        try:
            await second.wait_for(shows([["2", "Walk the dog"], ["3", "From the shell"]]), "the second page's state")
        finally:
            await second.close()

    async def broker_restart():
        await asyncio.get_running_loop().run_in_executor(None, tutorial.stop)
        await page.wait_for("document.querySelector('#status').className === 'error'", "the error state")
        await asyncio.get_running_loop().run_in_executor(None, tutorial.start, tutorial.port)
        # A new broker has a new (empty) state: the page subscribes again and asks for the content.
        await page.wait_for("document.querySelector('#status').textContent === '0 to do'", "the page recovers", 30000)

    await check("tutorial page: shows the content once it appears", appears)
    await check("tutorial page: adds and removes todos", add_and_remove)
    await check("tutorial page: an input sent by another client shows at once", live_from_outside)
    await check("tutorial page: a second page gets the current state at once", late_page)
    await check("tutorial page: shows the error state while the broker is down and recovers", broker_restart)
    if any(error for _, error in results) and page.console:
        print("tutorial page console:\n  " + "\n  ".join(page.console[-20:]))
    await page.close()
    return results


async def run(args):
    brokers = []
    try:
        open_broker = Broker(args.hubcli)
        brokers.append(open_broker)
        auth_config = tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False)
        auth_config.write(f"auth:\n  tokens: [{TOKEN}]\n")
        auth_config.close()
        auth_broker = Broker(args.hubcli, auth_config.name)
        brokers.append(auth_broker)
        tutorial = Broker(args.hubcli, os.path.join(REPOSITORY, "docs", "tutorial-todo", "hub.yml"))
        brokers.append(tutorial)
        # The conformance vectors' broker: every new subject keeps a history.
        conformance = Broker(args.hubcli, os.path.join(REPOSITORY, "Protocol", "conformance", "hub.yml"))
        brokers.append(conformance)
        vectors = sorted(f for f in os.listdir(os.path.join(REPOSITORY, "Protocol", "conformance", "vectors")) if f.endswith(".json"))
        server, base = serve_http({"url": open_broker.url, "authUrl": auth_broker.url, "conformanceUrl": conformance.url, "token": TOKEN, "vectors": vectors})
        browser = Chromium(args.chromium)
        try:
            await browser.connect()
            version = await browser.send("Browser.getVersion")
            print(f"# {version['product']}")
            page = await browser.open_page(f"{base}/clients/js/test/browser.html")
            results = await page.evaluate("window.hubTestResults", timeout=600)
            if any(r["status"] == "fail" for r in results) and page.console:
                print("test page console:\n  " + "\n  ".join(page.console[-20:]))
            await page.close()
            for name, error in await tutorial_checks(browser, base, tutorial):
                results.append({"name": name, "status": "fail" if error else "pass", "detail": error})
        finally:
            await browser.close()
            server.shutdown()
            os.unlink(auth_config.name)
    finally:
        for broker in brokers:
            broker.stop()
    counts = {"pass": 0, "fail": 0, "skip": 0}
    for result in results:
        counts[result["status"]] += 1
        detail = f": {result['detail']}" if result.get("detail") else ""
        print(f"{result['status'].upper()} {result['name']}{detail}")
    print(f"chromium: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
    return 0 if counts["fail"] == 0 and counts["pass"] > 0 else 1


def browser_arguments(description):
    """The arguments every browser check takes: the broker (--hubcli, $HUBCLI, else the
    debug build) and the browser (--chromium, $CHROMIUM, else `chromium`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--hubcli", default=os.environ.get("HUBCLI", os.path.join(REPOSITORY, ".build", "debug", "hubcli")))
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "chromium"))
    return parser


def report(label, results):
    """Prints each (name, error) check and `label: N passed, N failed`; the exit status."""
    failed = sum(1 for _, error in results if error)
    for name, error in results:
        print(f"{'FAIL' if error else 'PASS'} {name}{': ' + error if error else ''}")
    print(f"{label}: {len(results) - failed} passed, {failed} failed")
    return 0 if failed == 0 and results else 1


def main():
    return asyncio.run(run(browser_arguments(__doc__.splitlines()[0]).parse_args()))


if __name__ == "__main__":
    sys.exit(main())
