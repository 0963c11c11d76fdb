"""The viewer's HTTP server: the standard library's threading server, loopback by default.

Routes: ``/`` (runs per dataset), ``/run/<id>``, ``/compare?a=<reference>&b=<current>``,
``/production`` (the monitored metrics' drift and trend),
``/api/sample?run=<id>&id=<sample>`` (the JSON an expanded row shows) and the label queue,
``/label/<id>`` with its one write, ``POST /api/label`` (a CSRF token from the page; off
loopback also the team token, ``ASSAY_VIEW_TOKEN``). Pages are rendered on request from the
read-only store; labels go to their own file beside it. A request with a foreign ``Host``
header is refused when the server listens on loopback, so other web pages cannot read it
through DNS rebinding. With a token set (required beyond loopback) every request carries it
(:mod:`assay.view.auth`); the JSON API is :mod:`assay.view.api`.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Final
from urllib.parse import parse_qs, unquote, urlsplit

from assay.data.terminal import printable
from assay.errors import AssayError, NotFound, StoreError
from assay.store.labels import LABELS_FILE, LabelStore
from assay.store.project import project_dir
from assay.view.api import Answer, api_route
from assay.view.auth import COOKIE, Access
from assay.view.data import ViewData, sample_detail
from assay.view.labelling import MAX_BODY, authorised, label_queue_page, write_label
from assay.view.layout import e, page

_Request = socket.socket | tuple[bytes, socket.socket]  # what socketserver hands a handler
_Address = tuple[str, int] | str  # an address (host, port), or a path for a Unix socket

LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_FORM: Final = 4096  # bytes of a login form read at most
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "connect-src 'self'; img-src data:; form-action 'self'; base-uri 'none'"
)


WORKERS = 16  # requests served at once; more wait in the queue, not in threads of their own
IDLE_TIMEOUT_S = 15.0  # a connection that sends nothing for this long is closed


class ViewServer(ThreadingHTTPServer):
    """A threading HTTP server that carries the viewer's data source.

    Connections are served by a fixed pool of :data:`WORKERS` threads, and each gives up on a
    client silent for :data:`IDLE_TIMEOUT_S`: 400 half-sent requests once held 402 threads for
    ever. A client that disconnects early is not an error worth a traceback.
    """

    daemon_threads = True

    def __init__(
        self,
        data: ViewData,
        host: str,
        port: int,
        access: Access | None = None,
        *,
        workers: int = WORKERS,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
    ) -> None:
        self.data = data
        self.access = access if access is not None else Access(None)
        self.idle_timeout_s = idle_timeout_s
        self._workers = ThreadPoolExecutor(workers, thread_name_prefix="assay-view")
        super().__init__((host, port), Handler)
        self.allowed_hosts = _allowed_hosts(host, self.server_address[1])
        self.loopback = host in LOOPBACK
        self.token = secrets.token_urlsafe(32)  # the label page's CSRF token, per server
        self.team_token = os.environ.get("ASSAY_VIEW_TOKEN", "").strip() or None
        # beside a SQLite store; a server's store keeps them in the project's .assay/
        place = data.store.path
        folder = place.parent if isinstance(place, Path) else project_dir()
        self.labels = LabelStore(folder / LABELS_FILE)

    def process_request(self, request: _Request, client_address: _Address) -> None:
        """Serve on a pool thread (ThreadingMixIn starts a thread per connection)."""
        self._workers.submit(self.process_request_thread, request, client_address)

    def handle_error(self, request: _Request, client_address: _Address) -> None:
        """Quiet for a client that went away or fell silent; the default report otherwise."""
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)

    def server_close(self) -> None:
        super().server_close()
        self._workers.shutdown(wait=False, cancel_futures=True)

    @property
    def url(self) -> str:
        host = str(self.server_address[0])
        return f"http://{host if ':' not in str(host) else f'[{host}]'}:{self.server_address[1]}"


def _allowed_hosts(host: str, port: int) -> set[str] | None:
    if host not in LOOPBACK:
        return None  # the user chose to serve beyond this machine
    return {f"{name}:{port}" for name in ("127.0.0.1", "localhost", "[::1]")}


def _param(query: dict[str, list[str]], name: str) -> str:
    values = query.get(name)
    if not values or not values[0]:
        raise NotFound(f"missing query parameter '{name}'")
    return values[0]


def route(server: ViewServer, path: str, query: dict[str, list[str]]) -> Answer:
    """(content type, body) of one GET; NotFound or StoreError for unknown things."""
    from assay.view import pages

    data = server.data
    if path.startswith("/api/") and path not in ("/api/sample", "/api/label"):
        return api_route(data, path, query)
    if path.startswith("/label/") and len(path) > len("/label/"):
        run_id = unquote(path[len("/label/") :])
        return "text/html", label_queue_page(data, server.labels, run_id, query, server.token)
    if path == "/":
        return "text/html", pages.index(data)
    if path.startswith("/run/") and len(path) > len("/run/"):
        return "text/html", pages.run(data, unquote(path[len("/run/") :]))
    if path == "/production":
        from assay.production.store import default_path

        return "text/html", pages.production(default_path())
    if path == "/compare":
        return "text/html", pages.compare(data, _param(query, "a"), _param(query, "b"))
    if path == "/api/sample":
        run_id, sample_id = _param(query, "run"), _param(query, "id")
        try:
            detail = sample_detail(data, run_id, sample_id)
        except KeyError:
            raise NotFound(f"run '{run_id}' has no sample '{sample_id}'") from None
        return "application/json", json.dumps(detail, ensure_ascii=False, default=str)
    raise NotFound(f"no page at {path}")


class Handler(BaseHTTPRequestHandler):
    server: ViewServer

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.idle_timeout_s)  # a silent client frees its worker

    server_version = "assay-view"

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if not self._admitted(parts.path):
            return
        if parts.path == "/login":
            self._send(HTTPStatus.OK, "text/html", login_page(None))
            return
        try:
            kind, body = route(self.server, parts.path, parse_qs(parts.query))
            if isinstance(body, str):
                self._send(HTTPStatus.OK, kind, body)
            else:
                self._stream(kind, body)
        except (NotFound, StoreError) as exc:
            self._error(HTTPStatus.NOT_FOUND, str(exc), parts.path)
        except AssayError as exc:
            self._error(HTTPStatus.UNPROCESSABLE_ENTITY, str(exc), parts.path)
        except Exception as exc:  # one bad page must not stop the server
            line = f"assay view: {parts.path}: {type(exc).__name__}: {exc}"
            print(printable(line), file=sys.stderr)
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}", parts.path)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_POST(self) -> None:
        """The label queue's one write, and the login form; every other path is 404."""
        path = urlsplit(self.path).path
        if not self._admitted(path):
            return
        if path == "/login":
            self._login()
            return
        refused = authorised(
            self.headers, self.server.token, self.server.team_token, self.server.loopback
        )
        length = self.headers.get("Content-Length", "")
        if path != "/api/label":
            self._error(HTTPStatus.NOT_FOUND, f"no write at {path}", "/api/")
        elif refused is not None:
            self._error(HTTPStatus.FORBIDDEN, refused, "/api/")
        elif not length.isdigit() or int(length) > MAX_BODY:
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "body missing or too large", "/api/")
        else:
            self._write(self.rfile.read(int(length)))

    def _login(self) -> None:
        """``/login``: the token from the form, answered with the login cookie."""
        length = self.headers.get("Content-Length", "0")
        size = int(length) if length.isdigit() else 0
        form = parse_qs(self.rfile.read(min(size, MAX_FORM)).decode("utf-8", "replace"))
        access = self.server.access
        if access.token is None or not access.matches(form.get("token", [""])[0]):
            self._send(HTTPStatus.UNAUTHORIZED, "text/html", login_page("That is not the token."))
            return
        self.send_response(HTTPStatus.SEE_OTHER)
        cookie = f"{COOKIE}={access.cookie_value()}; Path=/; HttpOnly; SameSite=Strict"
        self.send_header("Set-Cookie", cookie)
        self.send_header("Location", "/")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _admitted(self, path: str) -> bool:
        """Whether the request may go on: its Host is allowed and (but for the login page)
        it carries the token; else the refusal is sent."""
        allowed = self.server.allowed_hosts
        if allowed is not None and self.headers.get("Host", "") not in allowed:
            self._send(HTTPStatus.FORBIDDEN, "text/plain", "forbidden host")
            return False
        if path == "/login" or self.server.access.allows(
            self.headers.get("Authorization", ""), self.headers.get("Cookie", "")
        ):
            return True
        if path.startswith("/api/"):
            body = json.dumps({"error": "a token is required (Authorization: Bearer ...)"})
            self._send(HTTPStatus.UNAUTHORIZED, "application/json", body, bearer=True)
        else:
            self.send_response(HTTPStatus.SEE_OTHER)
            self.send_header("Location", "/login")
            self.send_header("Content-Length", "0")
            self.end_headers()
        return False

    def _stream(self, kind: str, chunks: Iterable[bytes]) -> None:
        """Send a body piece by piece (its length unknown: the connection closes after it)."""
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self._safety_headers()
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        if self.command == "HEAD":
            return
        try:
            for chunk in chunks:
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client went away
        except Exception as exc:  # headers are sent: all that can be done is to stop
            print(f"assay view: {self.path}: {type(exc).__name__}: {exc}", file=sys.stderr)

    def _write(self, body: bytes) -> None:
        try:
            answer = write_label(self.server.data, self.server.labels, body)
            self._send(HTTPStatus.OK, "application/json", json.dumps(answer))
        except (NotFound, StoreError) as exc:
            self._error(HTTPStatus.NOT_FOUND, str(exc), "/api/")
        except AssayError as exc:
            self._error(HTTPStatus.UNPROCESSABLE_ENTITY, str(exc), "/api/")

    def _error(self, status: HTTPStatus, message: str, path: str) -> None:
        if path.startswith("/api/"):
            self._send(status, "application/json", json.dumps({"error": message}))
        else:
            body = f"<h1>{status.value} {e(status.phrase)}</h1><p>{e(message)}</p>"
            self._send(status, "text/html", page(status.phrase, body))

    def _send(self, status: HTTPStatus, kind: str, body: str, *, bearer: bool = False) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        if bearer:
            self.send_header("WWW-Authenticate", 'Bearer realm="assay view"')
        self._safety_headers()
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _safety_headers(self) -> None:
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: requests are not logged (errors are, once, in do_GET)."""


def login_page(problem: str | None) -> str:
    """The sign-in form: the token, posted to /login, answered with the login cookie."""
    note = f"<p><strong>{e(problem)}</strong></p>" if problem else ""
    body = (
        "<h1>assay view</h1><p>This viewer asks for its token (ASSAY_VIEW_TOKEN).</p>"
        f"{note}<form method='post' action='/login'>"
        "<label>Token <input type='password' name='token' autocomplete='current-password'>"
        "</label> <button type='submit'>Sign in</button></form>"
    )
    return page("Sign in", body)
