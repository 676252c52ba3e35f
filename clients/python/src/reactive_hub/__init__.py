"""Reactive Hub client for asyncio (protocol v1), on ``websockets``.

    async with Hub("ws://127.0.0.1:7420/") as hub:
        await hub.send("prices", 101.5)
        async for value in hub.subscribe("prices", prefetch=16):
            print(value)
"""
from pathlib import Path

from .errors import ErrorCode, HubError
from .hub import SUBPROTOCOL, Hub
from .reconnect import ReconnectPolicy
from .subscription import Subscription

__all__ = ["Hub", "Subscription", "HubError", "ErrorCode", "ReconnectPolicy", "SUBPROTOCOL", "__version__"]
# The release: the repository's VERSION, shipped inside the package.
__version__ = Path(__file__).with_name("VERSION").read_text(encoding="utf-8").strip()
