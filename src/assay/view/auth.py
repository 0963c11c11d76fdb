"""Who may read the viewer: a token for any address beyond this machine.

``assay view --host 0.0.0.0`` serves every run to whoever reaches the port, so binding to
anything but loopback needs ``ASSAY_VIEW_TOKEN``; without it the command refuses to start.
A client sends the token as ``Authorization: Bearer <token>`` (scripts, the API) or signs in
once at ``/login``, which sets a cookie holding a keyed hash of the token (never the token).
On loopback a token is optional; when set it is asked for there too.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import Final

from assay.errors import UsageError

TOKEN_ENV: Final = "ASSAY_VIEW_TOKEN"
COOKIE: Final = "assay_view"
MIN_TOKEN: Final = 16
LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class Access:
    """The token requests must carry; None: every request is served (loopback only)."""

    token: str | None

    def cookie_value(self) -> str:
        """The login cookie's value: a keyed hash of the token, so the cookie is no token."""
        assert self.token is not None
        return hmac.new(self.token.encode(), b"assay view login", hashlib.sha256).hexdigest()

    def allows(self, authorization: str, cookie: str) -> bool:
        """Whether a request with these ``Authorization`` and ``Cookie`` headers carries the
        token (or the login cookie)."""
        if self.token is None:
            return True
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() == "bearer" and self.matches(given.strip()):
            return True
        try:
            jar = SimpleCookie(cookie)
        except CookieError:
            return False
        morsel = jar.get(COOKIE)
        return morsel is not None and hmac.compare_digest(morsel.value, self.cookie_value())

    def matches(self, given: str) -> bool:
        """Whether ``given`` is the token (compared in constant time)."""
        return self.token is not None and hmac.compare_digest(given.encode(), self.token.encode())


def access_for(host: str, environ: Mapping[str, str] | None = None) -> Access:
    """The access rule of a viewer bound to ``host``; UsageError when a non-loopback address
    has no token (or one too short to resist guessing)."""
    token = (os.environ if environ is None else environ).get(TOKEN_ENV, "").strip() or None
    if token is not None and len(token) < MIN_TOKEN:
        raise UsageError(f"{TOKEN_ENV} must be at least {MIN_TOKEN} characters")
    if token is None and host not in LOOPBACK:
        raise UsageError(
            f"assay view: serving on {host} shows every run to anyone who reaches the port; "
            f"set {TOKEN_ENV} (at least {MIN_TOKEN} characters) to require a token"
        )
    return Access(token)
