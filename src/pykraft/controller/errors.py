"""The one exception the controller's handlers raise: a Kafka error code with its message."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["ApiError"]


class ApiError(Exception):
    """A request (or one item of it) refused with Kafka's ``code`` and ``message``."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message
