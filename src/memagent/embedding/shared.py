"""One embedder for every memagent process of a user: lent by a long-lived process, borrowed by
the others over a local socket.

Why
    The embedder is most of what memory costs a process: importing onnxruntime and tokenizers and
    opening the session take ~65 MB and a few hundred ms. A user who keeps ``memagent mcp serve``
    running (another agent's MCP server, usually) already holds one; a ``memagent -p`` or a REPL
    session started beside it borrows that one instead of loading its own.

Who lends
    ``memagent mcp serve``, once its own embedder has loaded (:class:`EmbedderLender`). Nothing
    else starts a server: without one, every process loads its own embedder, as before.

Where
    A Unix socket in Linux's abstract namespace, named after the user's id and the memagent home
    folder (:func:`lending_address`): processes with another ``MEMAGENT_HOME`` (a test, another
    profile) never meet, a dead lender leaves no file behind, and no path length limit applies.
    An abstract socket has no file mode, so both sides check the other's user id
    (``SO_PEERCRED``) and talk only to their own user. Elsewhere than Linux nothing is shared.

Protocol
    One request per connection: a JSON line, answered by a JSON line and, for vectors, their bytes.

    - ``{"op": "hello"}`` → ``{"name", "model_id", "dim"}`` of the lent embedder and the
      ``protocol`` (``PROTOCOL``; a borrower talks only to a lender of its own protocol, so an
      older ``mcp serve`` still running after an upgrade is left alone);
    - ``{"op": "embed", "model_id", "texts": [...]}`` → ``{"rows", "dim"}`` then
      ``rows × dim`` little-endian float32. The texts are embedded as one call, exactly as the
      borrower would have embedded them itself (the int8 graph's vectors depend on the batch).
    - other operations the lending process adds (``mirror-search``: ``memory.mirror_lending``)
      → a JSON line;
    - any failure → ``{"error": "..."}``.

A borrower uses the lent embedder only when it is the one it would load itself (same name, model
and dimension, :func:`~memagent.embedding.embedders.expected_embedder`). When a request fails (the
lender has gone, a bad answer, a timeout) it loads its own embedder and keeps it: a borrowed
embedder never makes a search fail.
"""

from __future__ import annotations

import array
import hashlib
import json
import math
import os
import socket
import struct
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memagent.errors import one_line
from memagent.jsontypes import JsonObject

if TYPE_CHECKING:
    import numpy as np

    from memagent.embedding.embedders import Embedder

PROTOCOL = 1  # bump when a request or an answer changes shape
HELLO_TIMEOUT = 0.25  # seconds a borrower waits to learn whether a lender is there
# How long a borrower waits for an answer before it does the work itself: a lender that hangs (a
# stopped process) costs a search at most this. A text takes ~10-30 ms, a batch of 32 ~0.3-1 s on
# two busy cores; the first search of a 100k mirror reads it (~0.1-0.5 s).
ANSWER_TIMEOUT = 2.0  # seconds, plus:
PER_TEXT_TIMEOUT = 0.25  # seconds per text embedded
SERVE_TIMEOUT = 60.0  # seconds the lender gives a borrower to send its request and take the answer
MAX_REQUEST = 8 << 20  # bytes of one request line
MAX_TEXTS = 1024
MAX_CONNECTIONS = 8  # requests served at once; more wait for the listener
_UCRED = struct.Struct("3i")  # pid, uid, gid


def lending_address(home: Path) -> str | None:
    """The abstract socket name for ``home`` (``None`` where abstract sockets do not exist)."""
    if not sys.platform.startswith("linux"):
        return None
    digest = hashlib.sha256(os.fsencode(os.path.realpath(home))).hexdigest()[:24]
    return f"\0memagent-embedder-{os.getuid()}-{digest}"


def _peer_is(sock: socket.socket, uid: int) -> bool:
    """Whether the process at the other end runs as ``uid``."""
    try:
        _, peer, _ = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
    except (OSError, struct.error):
        return False
    return peer == uid


def _read_line(reader, limit: int) -> JsonObject:
    line = reader.readline(limit + 1)
    if not line.endswith(b"\n"):
        raise ValueError("no whole request line" if len(line) <= limit else "request too large")
    value = json.loads(line)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def _describe(embedder: Embedder) -> JsonObject:
    return {"name": embedder.name, "model_id": getattr(embedder, "model_id", None), "dim": int(embedder.dim)}


class EmbedderLender:
    """Serves one loaded embedder on :func:`lending_address` until :meth:`close`."""

    def __init__(
        self, embedder: Embedder, address: str, operations: Mapping[str, Callable[[JsonObject], JsonObject]] = {}
    ) -> None:
        self.embedder = embedder
        self.address = address
        self.operations = dict(operations)  # more ops by name: request -> answer (no payload)
        self.uid = os.getuid()  # the only user served
        self._listener: socket.socket | None = None
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._embedding = threading.Lock()  # one batch at a time: the session uses every core

    def start(self) -> bool:
        """Listen on a daemon thread; ``False`` when another process lends already (or no
        socket can be had), which is fine: borrowers use that one."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(self.address)
            listener.listen(16)
        except OSError:
            listener.close()
            return False
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name="memagent-embedder-lender", daemon=True).start()
        return True

    def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()

    def _accept(self, listener: socket.socket) -> None:
        while self._listener is listener:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            self._slots.acquire()
            threading.Thread(target=self._serve, args=(connection,), name="memagent-embedder-loan", daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            with connection:
                connection.settimeout(SERVE_TIMEOUT)
                if not _peer_is(connection, self.uid):
                    return
                with connection.makefile("rb") as reader:
                    try:
                        header, payload = self._answer(_read_line(reader, MAX_REQUEST))
                    except (ValueError, TypeError, KeyError) as exc:
                        header, payload = {"error": f"bad request: {one_line(exc)}"}, b""
                    except Exception as exc:  # an operation's failure is the borrower's to handle
                        header, payload = {"error": f"{type(exc).__name__}: {one_line(exc)}"}, b""
                connection.sendall(json.dumps(header).encode() + b"\n" + payload)
        except OSError:
            pass  # the borrower went away; it falls back to its own embedder
        finally:
            self._slots.release()

    def _answer(self, request: JsonObject) -> tuple[JsonObject, bytes]:
        described = _describe(self.embedder)
        if request.get("op") == "hello":
            return {**described, "protocol": PROTOCOL}, b""
        operation = self.operations.get(str(request.get("op")))
        if operation is not None:
            return operation(request), b""
        if request.get("op") != "embed":
            return {"error": f"unknown op {request.get('op')!r}"}, b""
        texts = request["texts"]
        if request.get("model_id") != described["model_id"]:
            return {"error": "another model"}, b""
        if not isinstance(texts, list) or len(texts) > MAX_TEXTS or not all(isinstance(t, str) for t in texts):
            raise ValueError("texts must be a list of at most 1024 strings")
        try:
            with self._embedding:
                vectors = self.embedder.embed(texts)
        except Exception as exc:  # the borrower embeds itself and says why if it fails too
            return {"error": f"embedding failed: {one_line(exc)}"}, b""
        import numpy as np

        rows = np.ascontiguousarray(vectors, dtype="<f4").reshape(len(texts), described["dim"])
        return {"rows": len(texts), "dim": described["dim"]}, rows.tobytes()


class LenderGone(Exception):
    """A request to the lender failed; the borrower embeds itself from now on."""


def _ask(address: str, request: JsonObject, timeout: float, uid: int, payload: int = 0) -> tuple[JsonObject, bytes]:
    """Send ``request`` to a lender running as ``uid``; its answer's header and the ``payload``
    bytes that follow it (:class:`LenderGone` for any failure or an error answer)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(address)
            if not _peer_is(sock, uid):
                raise LenderGone("the socket belongs to another user")
            sock.sendall(json.dumps(request).encode() + b"\n")
            with sock.makefile("rb") as reader:
                answer = json.loads(reader.readline(65536) or b"null")
                if not isinstance(answer, dict):
                    raise LenderGone("no answer" if answer is None else "a malformed answer")
                if "error" in answer:
                    raise LenderGone(str(answer["error"]))
                data = reader.read(payload) if payload else b""
    except (OSError, ValueError) as exc:
        raise LenderGone(one_line(exc)) from None
    if len(data) != payload:
        raise LenderGone("the answer was cut short")
    return answer, data


class BorrowedEmbedder:
    """An :class:`~memagent.embedding.embedders.Embedder` whose vectors a lender computes; it
    loads ``own()`` instead, for good, the first time a request fails."""

    def __init__(self, address: str, described: JsonObject, own: Callable[[], Embedder]) -> None:
        self.address = address
        self.uid = os.getuid()  # the user a lender must run as
        self.name = str(described["name"])
        self.model_id = described.get("model_id")
        self.dim = int(described["dim"])  # type: ignore[call-overload]
        self.fallback_reasons: list[str] = []
        self._own_loader = own
        self._own: Embedder | None = None
        self._switch = threading.Lock()

    @property
    def borrowing(self) -> bool:
        return self._own is None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        return np.asarray(self.embed_lists(texts), dtype=np.float32).reshape(len(texts), self.dim)

    def embed_lists(self, texts: Sequence[str]) -> list[list[float]]:
        """The vectors as lists of floats: a borrower that only needs those imports no numpy."""
        if self._own is None:
            try:
                return self._borrowed(list(texts))
            except LenderGone as exc:
                self._fall_back(str(exc))
        assert self._own is not None
        return self._own.embed(texts).tolist()

    def _borrowed(self, texts: list[str]) -> list[list[float]]:
        answer, payload = _ask(
            self.address,
            {"op": "embed", "model_id": self.model_id, "texts": texts},
            ANSWER_TIMEOUT + PER_TEXT_TIMEOUT * len(texts),
            self.uid,
            payload=len(texts) * self.dim * 4,
        )
        if answer.get("rows") != len(texts) or answer.get("dim") != self.dim:
            raise LenderGone("an answer of another shape")
        values = array.array("f", payload)  # C floats: 4 bytes on every platform Python runs on here
        if sys.byteorder != "little":
            values.byteswap()
        if not all(map(math.isfinite, values)):
            raise LenderGone("non-finite vectors")
        return [values[row * self.dim : (row + 1) * self.dim].tolist() for row in range(len(texts))]

    def request(self, request: JsonObject) -> JsonObject | None:
        """Another operation of the lender (``memory.mirror_lending``): its answer, or ``None``
        when it gave none (the caller then does the work itself)."""
        if self._own is not None:
            return None
        try:
            return _ask(self.address, request, ANSWER_TIMEOUT, self.uid)[0]
        except LenderGone:
            return None

    def _fall_back(self, reason: str) -> None:
        with self._switch:
            if self._own is None:
                own = self._own_loader()
                if _describe(own) != {"name": self.name, "model_id": self.model_id, "dim": self.dim}:
                    raise LenderGone(f"the lender failed ({reason}) and this process's embedder is another one")
                self._own = own
                self.fallback_reasons.append(f"shared embedder: {reason}")


def hello(address: str | None, *, uid: int | None = None) -> JsonObject | None:
    """What the lender at ``address`` lends (name, model_id, dim, protocol), or ``None`` when no
    lender running as ``uid`` (this process's user unless given) answers."""
    if address is None:
        return None
    try:
        return _ask(address, {"op": "hello"}, HELLO_TIMEOUT, os.getuid() if uid is None else uid)[0]
    except LenderGone:
        return None


def borrow(
    address: str | None, wanted: JsonObject, own: Callable[[], Embedder], *, uid: int | None = None
) -> BorrowedEmbedder | None:
    """The lent embedder at ``address`` when :func:`hello` answers with ``wanted`` (name,
    model_id, dim, as :func:`~memagent.embedding.embedders.expected_embedder` says) and this
    process's protocol; else ``None``."""
    if not int(wanted.get("dim") or 0):  # type: ignore[call-overload]
        return None
    described = hello(address, uid=uid)
    if described is None or described.get("protocol") != PROTOCOL:
        return None
    if {key: described.get(key) for key in ("name", "model_id", "dim")} != dict(wanted):
        return None
    assert address is not None
    return BorrowedEmbedder(address, described, own)


__all__ = [
    "BorrowedEmbedder",
    "EmbedderLender",
    "LenderGone",
    "borrow",
    "hello",
    "lending_address",
]
