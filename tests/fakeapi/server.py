"""A loopback HTTP server that answers like the Anthropic Messages API, from a script."""

from __future__ import annotations

import json
import math
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakeapi.steps import Step, check_step, normalize_step
from fakeapi.validation import check_request

Responder = Callable[[dict[str, Any]], "Step | None"]

EXHAUSTED = "fake server: script exhausted"


def estimate_tokens(chars: int) -> int:
    return max(1, math.ceil(chars / 4))


def _strip_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache_control(v) for v in value]
    return value


def _request_pieces(body: dict[str, Any]) -> Iterator[tuple[str, bool]]:
    """The request in the API's cache order (tools, system, messages), one piece per block:
    (canonical text without cache_control, whether the piece carries a cache breakpoint)."""
    system = body.get("system")
    system_blocks = [{"type": "text", "text": system}] if isinstance(system, str) else (system or [])
    for tool in body.get("tools") or []:
        yield json.dumps(_strip_cache_control(tool), sort_keys=True), isinstance(tool, dict) and "cache_control" in tool
    for block in system_blocks:
        yield (
            json.dumps(_strip_cache_control(block), sort_keys=True),
            isinstance(block, dict) and "cache_control" in block,
        )
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
        for block in blocks:
            piece = json.dumps([message.get("role"), _strip_cache_control(block)], sort_keys=True)
            yield piece, isinstance(block, dict) and "cache_control" in block


class PromptCache:
    """A simple model of prompt caching: a breakpoint writes the hash of everything up to it;
    a later request reads the longest written prefix that ends at one of its block boundaries
    (at or before its last breakpoint). Token counts are characters / 4."""

    def __init__(self) -> None:
        self._written: set[str] = set()
        self._lock = threading.Lock()

    def usage_for(self, body: dict[str, Any]) -> dict[str, int]:
        import hashlib

        running = hashlib.sha256()
        chars = 0
        boundaries: list[tuple[str, int, bool]] = []  # (prefix hash, chars so far, breakpoint here)
        for piece, marked in _request_pieces(body):
            running.update(piece.encode())
            chars += len(piece)
            boundaries.append((running.hexdigest(), chars, marked))
        total = estimate_tokens(chars)
        last_mark = max((i for i, b in enumerate(boundaries) if b[2]), default=-1)
        if last_mark < 0:
            return {"input_tokens": total, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
        with self._lock:
            read_chars = max((c for h, c, _ in boundaries[: last_mark + 1] if h in self._written), default=0)
            for digest, _, marked in boundaries:
                if marked:
                    self._written.add(digest)
        cached_chars = boundaries[last_mark][1]
        read = read_chars // 4
        created = cached_chars // 4 - read
        return {
            "input_tokens": max(1, total - read - created),
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": created,
        }


def _chunks(value: str, parts: int = 3) -> list[str]:
    """Split a string into a few pieces, as the API streams deltas."""
    if not value:
        return []
    size = max(1, math.ceil(len(value) / parts))
    return [value[i : i + size] for i in range(0, len(value), size)]


def _output_tokens(content: list[dict[str, Any]]) -> int:
    return estimate_tokens(len(json.dumps(content)))


def _wire_block(block: dict[str, Any]) -> dict[str, Any]:
    """A scripted block as the non-streaming API returns it."""
    if block["type"] == "tool_use":
        truncated = "truncate_at" in block
        return {
            "type": "tool_use",
            "id": block["id"],
            "name": block["name"],
            "input": {} if truncated else block["input"],
        }
    return dict(block)


def sse_events(step: Step, model: str, usage: dict[str, int]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The (event name, data) pairs the API streams for a scripted message."""
    content = step["content"]
    output_tokens = step.get("usage", {}).get("output_tokens", _output_tokens(content))
    start_usage = {**usage, "output_tokens": 1}
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage,
            },
        },
    )
    yield "ping", {"type": "ping"}
    for index, block in enumerate(content):
        yield from _block_events(index, block)
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": step["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _block_events(index: int, block: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    kind = block["type"]
    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in _chunks(block["text"])]
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        raw = json.dumps(block["input"])
        if "truncate_at" in block:
            raw = raw[: block["truncate_at"]]
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in _chunks(raw)]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": piece} for piece in _chunks(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    else:
        start, deltas = dict(block), []
    yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
    for delta in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def error_body(error_type: str, message: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": f"req_{uuid.uuid4().hex[:24]}",
    }


def system_text(body: dict[str, Any]) -> str:
    system = body.get("system") or ""
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return str(system)


def is_memory_extraction(body: dict[str, Any]) -> bool:
    """The extraction contract (issue 6): its prompt contains the word "extract"; the agent's
    own system prompt never does."""
    text = system_text(body).lower()
    return "extract" in text and "you are memagent" not in text


def quiet_memory_chores(body: dict[str, Any]) -> Any:
    """Answer memory extraction with "nothing worth keeping"; everything else goes on."""
    return '{"memories": []}' if is_memory_extraction(body) else None


class FakeAnthropic:
    """A scripted fake of ``POST /v1/messages`` (JSON and SSE) and ``/v1/messages/count_tokens``.

    Use as a context manager; point the SDK at ``.url``. ``.requests`` holds every JSON body sent
    to /v1/messages, ``.errors`` every invariant violation or script problem the server saw.
    Scripted steps answer first; when they run out, ``responder(request_json)`` (if given) is
    asked for a step; without one the server answers 500 "fake server: script exhausted".
    ``chores(request_json)`` is asked *before* the script: a step it returns answers the request
    without consuming a scripted step. By default (no responder given) it answers memory
    extraction requests with ``{"memories": []}``, so the agent's background extraction never
    races a test's scripted conversation; pass ``chores=None`` to script extraction yourself.
    ``api_key``: when set, requests must carry it (``x-api-key`` or ``Authorization: Bearer``)
    or get a 401 like the real API. ``tolerate_system_role`` accepts the ``role: system`` messages
    Claude Code 2.1.x sends (for running Claude Code itself against this fake, side by side with
    memagent); memagent's own tests never set it.
    ``max_input_tokens``: a request estimated above it (characters / 4, as ``usage`` reports) is
    answered 400 ``prompt is too long: N tokens > M maximum`` without consuming a step; such
    requests are kept in ``.too_long``. ``count_tokens=False``: the server has no
    ``/v1/messages/count_tokens`` (404), like many proxies and local servers.
    """

    def __init__(
        self,
        script: Iterable[Any] | None = None,
        *,
        responder: Responder | None = None,
        api_key: str | None = None,
        port: int = 0,
        chores: Responder | None | str = "default",
        max_input_tokens: int | None = None,
        count_tokens: bool = True,
        tolerate_system_role: bool = False,
    ) -> None:
        self._steps: list[Step] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._httpd: ThreadingHTTPServer | None = None
        self._port = port
        self.responder = responder
        if chores == "default":
            chores = quiet_memory_chores if responder is None else None
        self.chores: Responder | None = chores  # type: ignore[assignment]
        self.chore_requests: list[dict[str, Any]] = []
        self.api_key = api_key
        self.tolerate_system_role = tolerate_system_role  # only for comparing with Claude Code
        self.cache = PromptCache()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.count_token_requests: list[dict[str, Any]] = []
        self.max_input_tokens = max_input_tokens
        self.count_tokens = count_tokens
        self.too_long: list[int] = []  # estimated sizes of the requests answered "prompt is too long"
        self.hangups: list[float] = []  # time.monotonic() of each client that closed a stalled stream
        self.errors: list[str] = []
        self.on_change: Callable[[FakeAnthropic], None] | None = None
        self.add(*(script or ()))

    # --- script -------------------------------------------------------------------------------

    def add(self, *steps: Any) -> FakeAnthropic:
        normalized = [normalize_step(s) for s in steps]
        for step in normalized:
            check_step(step)
        with self._lock:
            self._steps.extend(normalized)
        return self

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._steps)

    def _next_step(self, body: dict[str, Any]) -> Step | None:
        chore = self.chores(body) if self.chores is not None else None
        if chore is not None:
            with self._lock:
                self.chore_requests.append(body)
            return normalize_step(chore)
        with self._lock:
            step = self._steps.pop(0) if self._steps else None
        if step is not None:
            self._changed()
            return step
        if self.responder is None:
            return None
        step = self.responder(body)
        return normalize_step(step) if step is not None else None

    def record_error(self, problem: str) -> None:
        with self._lock:
            self.errors.append(problem)
        self._changed()

    def record_hangup(self) -> None:
        with self._lock:
            self.hangups.append(time.monotonic())
            self._arrived.notify_all()
        self._changed()

    def wait_for_hangups(self, count: int = 1, timeout: float = 10.0) -> bool:
        """Block until ``count`` clients have closed a stalled stream; False on timeout."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.hangups) >= count, timeout)

    def _record_request(self, body: Any, headers: dict[str, str], counting: bool) -> int:
        with self._lock:
            target = self.count_token_requests if counting else self.requests
            target.append(body)
            if not counting:
                self.headers.append(headers)
            number = len(target)
            self._arrived.notify_all()
        self._changed()
        return number

    def wait_for_requests(self, count: int = 1, timeout: float = 10.0) -> bool:
        """Block until ``count`` /v1/messages requests have arrived; False on timeout.
        (E.g. wait until the agent is mid-call before sending it Ctrl-C.)"""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.requests) >= count, timeout)

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)

    # --- lifecycle ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("fake server is not running")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("fake server is not running")
        return int(self._httpd.server_address[1])

    def start(self) -> FakeAnthropic:
        handler = type("BoundHandler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-anthropic", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait(self, seconds: float) -> bool:
        """Sleep unless the server stops first; True when it is stopping."""
        return self._stopping.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeAnthropic
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # silence per-request stderr lines
        return

    def setup(self) -> None:
        super().setup()
        # Each SSE event is a small write; without this, Nagle's algorithm and the client's
        # delayed ACK add ~40 ms to the end of every stream.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle(self) -> None:
        try:
            super().handle()
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away (cancelled, cut, or closed keep-alive)

    def do_POST(self) -> None:
        try:
            self._route()
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self) -> None:
        self._send_json(404, error_body("not_found_error", f"Not found: GET {self.path}"))

    def _route(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if path not in ("/v1/messages", "/v1/messages/count_tokens") or (
            path.endswith("count_tokens") and not self.fake.count_tokens
        ):
            self._send_json(404, error_body("not_found_error", f"Not found: POST {path}"))
            return
        if not self._authorized():
            self._send_json(401, error_body("authentication_error", "invalid x-api-key"), retry=False)
            return
        counting = path.endswith("count_tokens")
        try:
            body = json.loads(raw or b"null")
        except ValueError as exc:
            self.fake._record_request(None, self._header_dict(), counting)
            self._reject([f"request body is not valid JSON: {exc}"], None)
            return
        number = self.fake._record_request(body, self._header_dict(), counting)
        problems = check_request(body, counting_tokens=counting, tolerate_system_role=self.fake.tolerate_system_role)
        if problems:
            self._reject(problems, number)
            return
        size = estimate_tokens(sum(len(p) for p, _ in _request_pieces(body)))
        if counting:
            self._send_json(200, {"input_tokens": size})
            return
        limit = self.fake.max_input_tokens
        if limit is not None and size > limit:
            with self.fake._lock:
                self.fake.too_long.append(size)
            self._send_json(
                400,
                error_body("invalid_request_error", f"prompt is too long: {size} tokens > {limit} maximum"),
                retry=False,
            )
            return
        step = self._step_for(body)
        if step is not None:
            self._answer(step, body)

    def _header_dict(self) -> dict[str, str]:
        return {key.lower(): value for key, value in self.headers.items()}

    def _authorized(self) -> bool:
        key = self.fake.api_key
        if key is None:
            return True
        return self.headers.get("x-api-key") == key or self.headers.get("Authorization") == f"Bearer {key}"

    def _reject(self, problems: list[str], number: int | None) -> None:
        label = f"request {number}" if number else "request"
        for problem in problems:
            self.fake.record_error(f"{label}: {problem}")
        self._send_json(400, error_body("invalid_request_error", "; ".join(problems)), retry=False)

    def _step_for(self, body: dict[str, Any]) -> Step | None:
        try:
            step = self.fake._next_step(body)
        except Exception as exc:  # a test's responder failed: say so instead of hanging the client
            message = f"fake server: responder raised {type(exc).__name__}: {exc}"
            self.fake.record_error(message)
            self._send_json(500, error_body("api_error", message), retry=False)
            return None
        if step is None:
            self.fake.record_error(EXHAUSTED)
            self._send_json(500, error_body("api_error", EXHAUSTED), retry=False)
        return step

    def _answer(self, step: Step, body: dict[str, Any]) -> None:
        kind = step["type"]
        if kind == "delay":
            if self.fake.wait(float(step["seconds"])):
                self.close_connection = True
                return
            self._answer(step["step"], body)
        elif kind == "error":
            headers = {"retry-after-ms": str(int(step.get("retry_after", 0.01) * 1000))}
            self._send_json(step["status"], error_body(step["error_type"], step["message"]), extra=headers)
        elif kind == "cut":
            self._answer_message(step["step"], body, stop_after=int(step["after_events"]))
        elif kind == "stream_error":
            self._answer_message(
                step["step"],
                body,
                stop_after=int(step["after_events"]),
                error=error_body(step["error_type"], step["message"]),
            )
        elif kind == "stall":
            self._answer_message(step["step"], body, pause=(int(step["after_events"]), float(step["seconds"])))
        else:
            self._answer_message(step, body)

    def _answer_message(
        self,
        step: Step,
        body: dict[str, Any],
        stop_after: int | None = None,
        error: dict[str, Any] | None = None,
        pause: tuple[int, float] | None = None,
    ) -> None:
        overrides = {k: v for k, v in step.get("usage", {}).items() if k != "output_tokens"}
        usage = {**self.fake.cache.usage_for(body), **overrides}
        model = str(body.get("model"))
        if not body.get("stream"):
            if stop_after is not None:  # a cut non-streaming answer: drop the connection unanswered
                self.close_connection = True
                return
            self._send_json(200, self._json_message(step, model, usage))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
        self.end_headers()
        for sent, (name, data) in enumerate(sse_events(step, model, usage)):
            if pause is not None and sent == pause[0] and self._stalled(pause[1]):
                self.close_connection = True  # the server is stopping, or the client hung up
                return
            if stop_after is not None and sent >= stop_after:
                if error is not None:
                    self._write_chunk(f"event: error\ndata: {json.dumps(error)}\n\n")
                    break
                self.close_connection = True  # no terminating chunk: the client sees a broken body
                return
            self._write_chunk(f"event: {name}\ndata: {json.dumps(data)}\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _stalled(self, seconds: float) -> bool:
        """Pause a stream for ``seconds``, watching the client: True (send no more) when the
        server stops or the client closes the connection (recorded in ``fake.hangups``)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.fake.wait(0):
                return True
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
            if not readable:
                continue
            try:
                peeked = self.connection.recv(1, socket.MSG_PEEK)
            except OSError:
                peeked = b""
            if not peeked:
                self.fake.record_hangup()
                return True
            self.fake.wait(min(left, 0.05))  # bytes from the client mid-stream: not a hang-up
        return self.fake.wait(0)

    def _write_chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    @staticmethod
    def _json_message(step: Step, model: str, usage: dict[str, int]) -> dict[str, Any]:
        content = [_wire_block(b) for b in step["content"]]
        output_tokens = step.get("usage", {}).get("output_tokens", _output_tokens(step["content"]))
        return {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": step["stop_reason"],
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": output_tokens},
        }

    def _send_json(
        self, status: int, payload: dict[str, Any], *, retry: bool | None = None, extra: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", payload.get("request_id") or f"req_{uuid.uuid4().hex[:24]}")
        if retry is not None:
            self.send_header("x-should-retry", "true" if retry else "false")
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
