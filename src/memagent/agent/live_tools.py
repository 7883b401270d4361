"""Running one tool call so that the loop can report its output while it runs.

The handler runs in a worker thread; the loop's generator waits on a queue and yields a
:class:`ToolProgress` for the output the tool passes to ``ctx.progress``. Cancelling (Ctrl-C,
closing the turn, a termination signal) makes that callback raise ``ToolCancelled`` in the
worker, so a tool like ``bash`` kills its process group and returns.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import replace

from memagent.context.history import INTERRUPTED_TOOL
from memagent.events import AgentEvent, ToolProgress
from memagent.tools.base import BoundCall, RegisteredTool, ToolCancelled, ToolContext, ToolOutcome, ToolRegistry

CANCEL_WAIT_SECONDS = 3.0  # how long a cancelled tool gets to stop before it is left behind
_TOOL_DONE = object()


# Longer than 60 lines: the worker thread, its queue and cancellation must be read together.
def run_with_progress(
    tools: ToolRegistry,
    tool: RegisteredTool,
    value: BoundCall,
    context: ToolContext,
    call_id: str,
    stop: threading.Event | None = None,
    on_partial: Callable[[ToolOutcome], None] | None = None,
) -> Generator[AgentEvent, None, ToolOutcome]:
    """Run one tool call in a worker thread, yielding :class:`ToolProgress` while it runs.

    The tool gets a copy of ``context`` whose ``progress`` callback feeds the events. Returns
    the outcome (via StopIteration). When this generator is interrupted (KeyboardInterrupt,
    closed, a termination signal), the callback starts raising ``ToolCancelled`` so the tool
    stops and kills what it started (bash kills its process group), we wait for it a few
    seconds, and the interruption propagates; the outcome the tool returned on its way out (bash:
    the output so far) goes to ``on_partial``. A tool that never calls back is left to finish on
    its own and its result is dropped. A KeyboardInterrupt raised by the tool itself is
    re-raised here, as if it had run in this thread. A set ``stop`` event (the agent was
    cancelled from another thread: a parent agent, a parallel call) interrupts it the same way.
    """
    updates: queue.SimpleQueue[object] = queue.SimpleQueue()
    cancelled = threading.Event()
    outcomes: list[ToolOutcome] = []
    raised: list[BaseException] = []

    def progress(text: str) -> None:
        if cancelled.is_set():
            raise ToolCancelled()
        if text:
            updates.put(text)

    def work() -> None:
        try:
            outcomes.append(tools.execute(tool, value, replace(context, progress=progress)))
        except ToolCancelled:
            pass
        except BaseException as exc:  # KeyboardInterrupt/SystemExit: re-raised in the loop's thread
            raised.append(exc)
        finally:
            updates.put(_TOOL_DONE)

    started = time.monotonic()
    worker = threading.Thread(target=work, name=f"memagent-tool-{tool.name}", daemon=True)
    worker.start()
    try:
        done = False
        while not done:
            if stop is not None and stop.is_set():  # checked between outputs too: a chatty command
                raise KeyboardInterrupt from None
            try:
                item = updates.get(timeout=0.25)
            except queue.Empty:
                continue
            pieces: list[str] = []
            while True:  # everything queued so far goes into one event
                if item is _TOOL_DONE:
                    done = True
                    break
                pieces.append(str(item))
                try:
                    item = updates.get_nowait()
                except queue.Empty:
                    break
            if pieces:
                yield ToolProgress(call_id, tool.name, "".join(pieces), time.monotonic() - started)
    except BaseException:
        cancelled.set()
        worker.join(CANCEL_WAIT_SECONDS)
        if outcomes and on_partial is not None:
            on_partial(outcomes[0])  # what the tool had done when it was stopped
        raise
    worker.join()
    if raised:
        raise raised[0]
    return outcomes[0] if outcomes else ToolOutcome(INTERRUPTED_TOOL, is_error=True)


__all__ = ["CANCEL_WAIT_SECONDS", "run_with_progress"]
