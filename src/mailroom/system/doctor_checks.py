"""What `mailroom doctor` reports: one `Check` per thing looked at (ok / warn / fail, what was
found, how to fix it), and the few words it uses to say what went wrong."""

from __future__ import annotations

import ipaddress
import socket
import ssl
from dataclasses import asdict, dataclass
from typing import Any

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def ok(name: str, detail: str) -> Check:
    return Check(name, OK, detail)


def warn(name: str, detail: str, fix: str | None = None) -> Check:
    return Check(name, WARN, detail, fix)


def fail(name: str, detail: str, fix: str) -> Check:
    return Check(name, FAIL, detail, fix)


def failed(checks: list[Check]) -> bool:
    return any(c.status == FAIL for c in checks)


# ---------------------------------------------------------------------------- what it shows


def short_error(exc: BaseException) -> str:
    """One line saying what went wrong (the driver's own error, not SQLAlchemy's wrapper)."""
    inner = getattr(exc, "orig", None) or exc
    text = str(inner).strip().splitlines()[0] if str(inner).strip() else ""
    name = type(inner).__name__
    return f"{name}: {text}"[:300] if text else name


def connect_error(exc: BaseException) -> str:
    """Why a connection failed, in a few words where the cause is a common one."""
    problem: BaseException | None = exc
    for _ in range(6):  # down the chain: httpx and aiosmtplib wrap the socket's error
        if problem is None:
            break
        if isinstance(problem, ConnectionRefusedError):
            return "connection refused"
        if isinstance(problem, socket.gaierror):
            return f"the host name does not resolve ({problem.strerror})"
        if isinstance(problem, TimeoutError):
            return "timed out"
        problem = problem.__cause__ or problem.__context__
    return short_error(exc)


def tls_error(exc: BaseException) -> ssl.SSLError | None:
    """The TLS error under `exc` (aiosmtplib wraps it), if that is what went wrong."""
    problem: BaseException | None = exc
    for _ in range(6):
        if problem is None:
            return None
        if isinstance(problem, ssl.SSLError):
            return problem
        problem = problem.__cause__ or problem.__context__
    return None


def ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f} h ago"
    return f"{seconds / 86400:.0f} days ago"


def size_text(count: float) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
