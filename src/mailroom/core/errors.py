"""The one error type every layer raises; `app.py` renders it as `{"error": message, **extras}`."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A refusal the client should see: HTTP status, the spec's message, and named extras."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        **extras: Any,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extras = extras
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"error": self.message, **self.extras}

    def __repr__(self) -> str:
        return f"ApiError({self.status}, {self.message!r})"


def not_found(what: str) -> ApiError:
    """404 in the spec's wording, e.g. `Contact not found`."""
    return ApiError(404, f"{what} not found")


def bad_request(message: str, **extras: Any) -> ApiError:
    return ApiError(400, message, **extras)
