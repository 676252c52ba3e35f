"""The benchmark scripts' WebSocket client of the hub (scripts/bench-*): raw sockets,
no library, so that its cost is small and the same in every run.

Frames are sent with a zero masking key (RFC 6455 allows any key; the server cannot
tell), so the client spends nothing masking.
"""

import base64
import os
import socket
import struct


def frame(payload):
    """A masked text frame holding `payload` (bytes)."""
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x81, 0x80 | n)
    elif n < 65536:
        header = struct.pack("!BBH", 0x81, 0x80 | 126, n)
    else:
        header = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
    return header + b"\0\0\0\0" + payload


class HubSocket:
    """One WebSocket connection to a hub on 127.0.0.1:`port` (subprotocol hub.v1)."""

    def __init__(self, sock, port):
        self.sock = sock
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: hub.v1\r\n\r\n").encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("the hub closed the upgrade")
            buf += chunk
        head, _, self.buf = buf.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"upgrade refused: {head[:200]!r}")

    def messages(self, data):
        """The text payloads of the complete messages in what was read before plus `data`
        (a message the server sent in fragments is joined); a close frame raises."""
        buf = self.buf + data
        out = []
        while len(buf) >= 2:
            fin, opcode, n, at = buf[0] & 0x80, buf[0] & 0x0F, buf[1] & 0x7F, 2
            if n == 126:
                if len(buf) < 4:
                    break
                n, at = struct.unpack("!H", buf[2:4])[0], 4
            elif n == 127:
                if len(buf) < 10:
                    break
                n, at = struct.unpack("!Q", buf[2:10])[0], 10
            if len(buf) < at + n:
                break
            if opcode in (0x1, 0x0):
                self.fragments = (getattr(self, "fragments", b"") if opcode == 0x0 else b"") + buf[at:at + n]
                if fin:
                    out.append(self.fragments)
                    self.fragments = b""
            elif opcode == 0x8:
                raise RuntimeError(f"the hub closed: {buf[at:at + n]!r}")
            buf = buf[at + n:]
        self.buf = buf
        return out
