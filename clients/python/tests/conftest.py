"""Fixtures: real `hubcli serve` processes on ephemeral loopback ports, and
`async def` tests run on a fresh event loop (no plugin needed)."""
import asyncio
import inspect
import os
import re
import signal
import subprocess
import tempfile
import time

import pytest

REPOSITORY = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HUBCLI = os.environ.get("HUBCLI", os.path.join(REPOSITORY, ".build", "debug", "hubcli"))
TOKEN = "python-test-token"
TEST_TIMEOUT = 120  # a hang guard, not a timing assertion


def pytest_pyfunc_call(pyfuncitem):
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        asyncio.run(asyncio.wait_for(pyfuncitem.obj(**arguments), TEST_TIMEOUT))
        return True
    return None


class Broker:
    """A `hubcli serve` on 127.0.0.1 that can be stopped and started again on its port."""

    def __init__(self, config=None):
        self.config = config
        self.port = 0
        self.process = None
        self.start()

    def start(self):
        args = [HUBCLI, "serve", "--host", "127.0.0.1", "--port", str(self.port)]
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
                return self
            if self.process.poll() is not None:
                raise RuntimeError(f"the broker exited ({self.process.returncode}):\n{text}")
            time.sleep(0.05)
        raise RuntimeError("the broker did not start within 60 s")

    def stop(self, sig=signal.SIGTERM):
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="session")
def broker():
    server = Broker()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def conformance_broker():
    """The conformance vectors' broker: every new subject keeps a history (Protocol/conformance/hub.yml)."""
    server = Broker(os.path.join(REPOSITORY, "Protocol", "conformance", "hub.yml"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def auth_broker(tmp_path_factory):
    config = tmp_path_factory.mktemp("auth") / "hub.yml"
    config.write_text(f"auth:\n  tokens: [{TOKEN}]\n")
    server = Broker(str(config))
    yield server
    server.stop()


@pytest.fixture
def own_broker():
    """A broker of the test's own, which it may stop and restart."""
    server = Broker()
    yield server
    server.stop(signal.SIGKILL)
