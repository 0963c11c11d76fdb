"""HTTP URLs and header values the user gives: whether each is usable; a URL safe to print."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")


def is_header_value(text: str) -> bool:
    """Whether ``text`` can be sent as one HTTP header value: printable ASCII, tabs allowed.

    httpx refuses any other character at send time, and a CR or LF would end the header early
    (the provider pool writes its header lines itself).
    """
    return _HEADER_VALUE.fullmatch(text) is not None


def is_http_url(url: str) -> bool:
    """Whether ``url`` is an http(s) URL with a host and, if it names one, a port in 0-65535.

    ``urlsplit`` takes ``http://[::1/x`` or port 99999 without complaint and raises only when
    the host or port is read: here, not later as a row error or an unexpected ValueError.
    """
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname) and _port_ok(parts.port)
    except ValueError:
        return False


def _port_ok(port: int | None) -> bool:
    return port is None or port >= 0  # urlsplit raises for one past 65535


def public_url(url: str) -> str:
    """The URL without credentials, query or fragment (safe for reports and messages)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
