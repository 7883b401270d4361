"""Reading a model's stream so that a cancel ends it at once.

The model's ``stream(request)`` is read on a worker thread and its events handed over through a
queue; the loop's thread waits on that queue. The request's :class:`~memagent.llm.types.Abort`
is the off switch: set from another thread (``Agent.cancel``), it wakes the waiting loop at once
— even while the adapter is still inside the SDK, waiting for headers, a retry's back-off or the
next chunk — and the adapter closes its connection (see ``AnthropicModel.stream``). The worker
then unwinds on its own. Leaving the iteration early for any reason (a KeyboardInterrupt in the
loop's thread, the turn closed) sets the switch too, so no stream is left open behind it.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass

from memagent.llm.protocol import ChatModel
from memagent.llm.types import Abort, ModelRequest, StreamEvent, StreamInterrupted

CANCELLED = "the model call was cancelled"


@dataclass(frozen=True)
class _Ended:
    """The worker's last item: how the stream ended (``error`` None: it completed)."""

    error: BaseException | None = None


def stream_live(model: ChatModel, request: ModelRequest, abort: Abort) -> Iterator[StreamEvent]:
    """``model.stream(request)`` read on a worker thread. Set ``abort`` to stop it: this iterator
    then raises :class:`StreamInterrupted` at once. An exception of the stream (a ModelError, a
    KeyboardInterrupt raised inside it) is raised here, after the events that came before it."""
    request.abort = abort
    handed: queue.SimpleQueue[StreamEvent | _Ended] = queue.SimpleQueue()
    forget = abort.when_set(lambda: handed.put(_Ended(StreamInterrupted(CANCELLED))))
    context = contextvars.copy_context()  # the caller's context variables, in the worker too
    worker = threading.Thread(
        target=context.run, args=(_pump, model, request, abort, handed), name="memagent-model", daemon=True
    )
    worker.start()
    try:
        while True:
            item = handed.get()
            if isinstance(item, _Ended):
                if item.error is not None:
                    raise item.error
                return
            yield item
    finally:
        forget()
        abort.set()  # a no-op once the stream completed; else it closes the connection


def _pump(
    model: ChatModel, request: ModelRequest, abort: Abort, handed: queue.SimpleQueue[StreamEvent | _Ended]
) -> None:
    stream = model.stream(request)
    try:
        for event in stream:
            if abort.is_set:
                return
            handed.put(event)
    except BaseException as exc:  # KeyboardInterrupt too: re-raised in the loop's thread
        handed.put(_Ended(exc))
    else:
        handed.put(_Ended())
    finally:
        if isinstance(stream, Generator):
            stream.close()


__all__ = ["CANCELLED", "stream_live"]
