"""Typed errors of the Reactive Hub client."""
from __future__ import annotations

from typing import Any, Optional


class ErrorCode:
    """Every code a :class:`HubError` can carry: the server's (PROTOCOL.md §6) and the client's own."""

    # The server's (PROTOCOL.md §6).
    BAD_MESSAGE = "bad_message"
    UNKNOWN_OP = "unknown_op"
    NOT_FOUND = "not_found"
    DUPLICATE_ID = "duplicate_id"
    INVALID_DEMAND = "invalid_demand"
    PIPELINE_ERROR = "pipeline_error"
    FAILED = "failed"
    OVERFLOW = "overflow"
    FORBIDDEN = "forbidden"
    UNAUTHORIZED = "unauthorized"
    LIMIT_EXCEEDED = "limit_exceeded"
    COMPLETED = "completed"
    INVALID_VALUE = "invalid_value"
    STORAGE_UNAVAILABLE = "storage_unavailable"
    SHUTTING_DOWN = "shutting_down"
    INTERNAL = "internal"
    # The client's (the same names as the Swift and JS clients').
    INVALID_URL = "invalid_url"
    INVALID_ARGUMENT = "invalid_argument"
    CONNECTION_FAILED = "connection_failed"
    TIMEOUT = "timeout"
    PROTOCOL_ERROR = "protocol_error"
    DISCONNECTED = "disconnected"
    CLOSED = "closed"
    CANCELLED = "cancelled"
    #: A subscription to a subject with history could not go on without a gap (PROTOCOL.md §10).
    RESUME_FAILED = "resume_failed"


_UNSET: Any = object()


class HubError(Exception):
    """A failure with a stable machine-readable ``code`` (one of :class:`ErrorCode`).

    ``data`` is the server's ``data`` (a pipeline_error's position, a failed
    stream's error value); ``close_code`` the WebSocket close code of a
    ``disconnected`` error when the server sent one; ``from_server`` whether the
    server reported the error.
    """

    def __init__(self, code: str, message: str, *, data: Any = _UNSET, close_code: Optional[int] = None,
                 from_server: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.has_data = data is not _UNSET
        self.data = None if data is _UNSET else data
        self.close_code = close_code
        self.from_server = from_server

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"HubError({self.code!r}, {self.message!r})"
