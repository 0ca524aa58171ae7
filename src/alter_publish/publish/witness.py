"""A minimal witness (c2sp.org/tlog-witness ``add-checkpoint``) for the logs it is
given, over the standard library's threaded HTTP server.

For each log origin the witness keeps the latest checkpoint it cosigned in
``<state>/<origin, percent-encoded>`` (:func:`state_file_name`; written atomically,
before it answers). A
checkpoint is cosigned (``cosignature/v1``, at the time the clock gives) only when a
trusted key of its origin signed it and it extends that checkpoint; otherwise the
answer is the spec's: 400 malformed or old size above the checkpoint's, 403 no trusted
signature, 404 unknown origin, 409 the old size is not the witness's latest (body: that
size, ``text/x.tlog.size``) or the same size with another root, 422 a bad consistency
proof. One lock makes checking the old size and persisting the new one atomic.
"""

from __future__ import annotations

import hashlib
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from alter_publish.errors import ServeError, VerificationError
from alter_publish.fileio import PUBLIC_DIR_MODE, PUBLIC_MODE, atomic_write_text, make_dirs
from alter_publish.format.identitylog import EMPTY_ROOT
from alter_publish.format.note import Note, Signer, Verifier
from alter_publish.format.tlog import Checkpoint, verify_consistency
from alter_publish.format.witness import ADD_CHECKPOINT_PATH, SIZE_CONTENT_TYPE, AddCheckpoint

REQUEST_OCTETS_MAX = 64 * 1024
TEXT_CONTENT_TYPE = "text/plain; charset=utf-8"
#: Seconds a connection may stay silent before the server drops it.
CONNECTION_TIMEOUT_SECONDS = 30
LISTEN_BACKLOG = 128


@dataclass(frozen=True, slots=True)
class Reply:
    """An HTTP answer: status, content type and body."""

    status: int
    body: str
    content_type: str = TEXT_CONTENT_TYPE


def _text(status: HTTPStatus, what: str) -> Reply:
    return Reply(int(status), what + "\n")


#: The longest state file name: NAME_MAX (255) less what an atomic write's temporary
#: file adds to it (``.<name>.<8 random>.tmp``).
STATE_NAME_OCTETS_MAX = 255 - 14
#: ``urllib.parse.quote`` never writes ``%2E`` (it leaves ``.`` alone): the names that
#: start with it cannot be any other origin's percent-encoded name.
_ESCAPED_DOT = "%2E"
_HASHED_PREFIX = f"{_ESCAPED_DOT}sha256-"


def state_file_name(origin: str) -> str:
    """The name of ``origin``'s state file, one path element safe on any POSIX file
    system and different for every origin: the origin percent-encoded (every octet but
    ``A-Z a-z 0-9 _ . - ~``), except ``.`` and ``..`` (``%2E``, ``%2E%2E``) and names
    over :data:`STATE_NAME_OCTETS_MAX` octets (``%2Esha256-`` and the hex SHA-256 of
    the origin's UTF-8).
    """
    name = urllib.parse.quote(origin, safe="")
    if name in (".", ".."):
        return _ESCAPED_DOT * len(name)
    if len(name) > STATE_NAME_OCTETS_MAX:
        return _HASHED_PREFIX + hashlib.sha256(origin.encode("utf-8")).hexdigest()
    return name


@dataclass(frozen=True, slots=True)
class WitnessState:
    """The latest cosigned checkpoint per origin, one file each under ``directory``."""

    directory: Path

    def path(self, origin: str) -> Path:
        """The file of ``origin`` (:func:`state_file_name`)."""
        return self.directory / state_file_name(origin)

    def latest(self, origin: str) -> Checkpoint | None:
        """The latest checkpoint cosigned for ``origin``, if any.

        Raises:
            ServeError: the file is unreadable or not a checkpoint.
        """
        path = self.path(origin)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise ServeError(f"cannot read witness state: {exc}", where=str(path)) from exc
        try:
            return Checkpoint.parse(Note.parse(text).text)
        except VerificationError as exc:
            raise ServeError(f"bad witness state: {exc.what}", where=str(path)) from exc

    def store(self, origin: str, note: str) -> None:
        """Record ``note`` as the latest checkpoint of ``origin`` (atomically, synced).

        Raises:
            ServeError: it could not be written.
        """
        atomic_write_text(self.path(origin), note, mode=PUBLIC_MODE, error=ServeError)


class Witness:
    """The add-checkpoint logic: trusted log keys by origin, the state, the clock."""

    def __init__(
        self,
        signer: Signer,
        logs: Sequence[Verifier],
        state: WitnessState,
        clock: Callable[[], int],
    ) -> None:
        self.signer = signer
        self.logs: dict[str, list[Verifier]] = {}
        for key in logs:
            self.logs.setdefault(key.name, []).append(key)
        self.state = state
        self.clock = clock
        self.lock = threading.Lock()

    def add_checkpoint(self, body: bytes) -> Reply:
        """The answer to an ``add-checkpoint`` request body (see the module).

        Raises:
            ServeError: the state could not be read or written.
        """
        try:
            request = AddCheckpoint.parse(body.decode("utf-8"))
            note = Note.parse(request.checkpoint)
            checkpoint = Checkpoint.parse(note.text)
        except (UnicodeDecodeError, VerificationError) as exc:
            return _text(HTTPStatus.BAD_REQUEST, f"malformed request: {exc}")
        keys = self.logs.get(checkpoint.origin)
        if keys is None:
            return _text(HTTPStatus.NOT_FOUND, f"unknown log {checkpoint.origin!r}")
        if not any(_verifies(note, key) for key in keys):
            return _text(HTTPStatus.FORBIDDEN, "no trusted log signature verifies")
        if request.old > checkpoint.size:
            return _text(HTTPStatus.BAD_REQUEST, "old size is above the checkpoint's size")
        with self.lock:
            return self._extend(request, note, checkpoint)

    def _extend(self, request: AddCheckpoint, note: Note, checkpoint: Checkpoint) -> Reply:
        latest = self.state.latest(checkpoint.origin)
        latest_size = 0 if latest is None else latest.size
        if request.old != latest_size:
            return Reply(int(HTTPStatus.CONFLICT), f"{latest_size}\n", SIZE_CONTENT_TYPE)
        if latest is not None and latest.size == checkpoint.size:
            if latest.root != checkpoint.root:
                return _text(HTTPStatus.CONFLICT, f"another root for size {latest.size}")
        elif latest is not None or request.proof:
            old_root = EMPTY_ROOT if latest is None else latest.root
            try:
                verify_consistency(
                    request.old, checkpoint.size, old_root, checkpoint.root, request.proof
                )
            except VerificationError as exc:
                return _text(HTTPStatus.UNPROCESSABLE_ENTITY, f"bad consistency proof: {exc}")
        cosigned = Note(note.text).cosigned_by(self.signer, self.clock())
        self.state.store(checkpoint.origin, note.to_text())
        return Reply(int(HTTPStatus.OK), cosigned.signatures[0].to_line())


def _verifies(note: Note, key: Verifier) -> bool:
    try:
        note.verify(key)
    except VerificationError:
        return False
    return True


class _Handler(BaseHTTPRequestHandler):
    """One request to the witness: POST <prefix>/add-checkpoint."""

    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = CONNECTION_TIMEOUT_SECONDS

    def _send(self, reply: Reply) -> None:
        data = reply.body.encode("utf-8")
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        """Answer add-checkpoint; anything else is 404."""
        length_text = self.headers.get("Content-Length", "")
        if not length_text.isdigit() or int(length_text) > REQUEST_OCTETS_MAX:
            self.close_connection = True
            self._send(_text(HTTPStatus.BAD_REQUEST, "needs a Content-Length up to 64 KiB"))
            return
        body = self.rfile.read(int(length_text))
        if urllib.parse.urlsplit(self.path).path != ADD_CHECKPOINT_PATH:
            self._send(_text(HTTPStatus.NOT_FOUND, "only POST /add-checkpoint"))
            return
        try:
            reply = self.server.witness.add_checkpoint(body)
        except ServeError as exc:
            reply = _text(HTTPStatus.INTERNAL_SERVER_ERROR, str(exc))
        self._send(reply)

    def do_GET(self) -> None:
        """Nothing to read here."""
        self._send(_text(HTTPStatus.NOT_FOUND, "only POST /add-checkpoint"))

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the CLI reports what matters."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG  # http.server's 5 resets a burst of submissions

    def __init__(self, address: tuple[str, int], witness: Witness) -> None:
        self.witness = witness
        super().__init__(address, _Handler)


@contextmanager
def witness_server(
    witness: Witness, host: str, port: int
) -> Iterator[tuple[_Server, tuple[str, int]]]:
    """A threaded HTTP server for ``witness`` bound to ``host:port`` (0: any free port),
    and the address it bound; call ``serve_forever()`` on it.

    Raises:
        ServeError: the address cannot be bound or the state directory made.
    """
    try:
        make_dirs(witness.state.directory, PUBLIC_DIR_MODE)
    except OSError as exc:
        where = str(witness.state.directory)
        raise ServeError(f"cannot make directory: {exc.strerror}", where=where) from exc
    try:
        server = _Server((host, port), witness)
    except OSError as exc:
        raise ServeError(f"cannot listen: {exc.strerror}", where=f"{host}:{port}") from exc
    try:
        bound = server.server_address
        yield server, (str(bound[0]), int(bound[1]))
    finally:
        server.server_close()
