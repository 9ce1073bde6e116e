"""Errors raised by MissyClient.

Every error answer of missyd is ``{"error": {"code", "message", "field"}}`` with a
matching HTTP status (docs/API.md, "Errors"). The client raises the subclass of
:class:`MissyError` that matches ``code``; each keeps ``status``, ``code``,
``message``, ``field`` and the whole decoded ``body`` (a strict-mode 422 carries its
``warnings`` there). A daemon that cannot be reached is :class:`ConnectionError`,
which is also a built-in ``ConnectionError`` (so ``except OSError`` catches it too).
"""

from __future__ import annotations

import builtins
from typing import Any, Optional


class MissyError(Exception):
    """An error answer of missyd (or, for ConnectionError, no answer at all)."""

    def __init__(self, message: str, *, status: int = 0, code: str = "", field: str = "",
                 body: Optional[dict] = None) -> None:
        super().__init__(message)
        self.status = status  # HTTP status; 0 when there was no answer
        self.code = code  # the API's error.code, e.g. "invalid_argument"
        self.message = message  # the API's error.message
        self.field = field  # the offending request field, "" when no single field
        self.body = body if body is not None else {}  # the decoded answer body

    def __str__(self) -> str:
        where = f" [{self.field}]" if self.field else ""
        status = f"{self.status} " if self.status else ""
        code = f"{self.code}: " if self.code else ""
        return f"{status}{code}{self.message}{where}"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, "
                f"message={self.message!r}, field={self.field!r})")


class InvalidArgument(MissyError):
    """400 invalid_argument: malformed JSON, wrong type, unknown field, bad value."""


class NotFound(MissyError):
    """404 not_found: unknown session, summary, memory item, context id or path."""


class MethodNotAllowed(MissyError):
    """405 method_not_allowed: the path exists with another method."""


class AlreadyExists(MissyError):
    """409 already_exists: a session with that id exists (field "id")."""


class Conflict(MissyError):
    """409 conflict: the stored state does not allow the operation."""


class PayloadTooLarge(MissyError):
    """413 payload_too_large: body over context.limits.max_body_bytes, or >10,000 messages."""


class HeadersTooLarge(MissyError):
    """431 headers_too_large: request headers over 16 KiB."""


class Unprocessable(MissyError):
    """422 unprocessable: well-formed but refused (strict mode; see ``warnings``)."""

    @property
    def warnings(self) -> list:
        """The append warnings a strict-mode refusal carries beside ``error``."""
        return list(self.body.get("warnings", []))


class ContextOverflow(Unprocessable):
    """422 context_overflow: even the newest turn cannot fit the budget."""


class InternalError(MissyError):
    """500 internal or corruption: a daemon bug or damaged data."""


class Unavailable(MissyError):
    """503 unavailable: storage cannot write (disk full, read-only database)."""


class ConnectionError(MissyError, builtins.ConnectionError):  # noqa: A001 (named by the API)
    """missyd cannot be reached at the socket path (not running, wrong path, no access)."""

    def __init__(self, socket_path: str, reason: str) -> None:
        message = (f"cannot reach missyd at {socket_path}: {reason} (is missyd running? "
                   "start it with `missyd`, or pass socket_path / set MISSY_SOCKET)")
        super().__init__(message, code="unreachable")
        self.socket_path = socket_path
        self.reason = reason

    def __str__(self) -> str:
        return self.message


MissyConnectionError = ConnectionError  # an alias that does not shadow the built-in name

_BY_CODE: dict[str, type[MissyError]] = {
    "invalid_argument": InvalidArgument,
    "not_found": NotFound,
    "method_not_allowed": MethodNotAllowed,
    "already_exists": AlreadyExists,
    "conflict": Conflict,
    "payload_too_large": PayloadTooLarge,
    "headers_too_large": HeadersTooLarge,
    "unprocessable": Unprocessable,
    "context_overflow": ContextOverflow,
    "internal": InternalError,
    "corruption": InternalError,
    "unavailable": Unavailable,
}

_BY_STATUS: dict[int, type[MissyError]] = {
    400: InvalidArgument, 404: NotFound, 405: MethodNotAllowed, 409: Conflict,
    413: PayloadTooLarge, 422: Unprocessable, 431: HeadersTooLarge, 500: InternalError,
    503: Unavailable,
}


def error_from_response(status: int, body: Any, raw: bytes = b"") -> MissyError:
    """The exception for an error answer: by ``error.code``, else by HTTP status."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = str(error.get("code", ""))
        message = str(error.get("message", ""))
        field = str(error.get("field", "") or "")
    else:  # not the documented shape (should not happen): keep what there is
        code = ""
        message = raw.decode("utf-8", "replace").strip() or f"HTTP {status}"
        field = ""
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status, MissyError)
    return cls(message, status=status, code=code, field=field,
               body=body if isinstance(body, dict) else {})
