"""Several tool calls of one model response at once (the ``task`` calls of a parent agent).

Each call runs all its steps (feature checks, approval, the tool) in a thread of its own; the
events they yield are merged into the loop's stream as they happen, each still bracketed by its
own :class:`~memagent.events.ToolCallStarted` and :class:`~memagent.events.ToolCallFinished`.
The outcomes come back in call order, so the tool results the model gets are in the order of
its calls. When the loop is interrupted (Ctrl-C, a cancel from a parent agent), ``stop`` is set:
every running call sees it and stops (a tool in a worker kills what it started), and the calls
that did not finish have no outcome (None).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Sequence
from typing import TypeVar

from memagent.agent.live_tools import CANCEL_WAIT_SECONDS
from memagent.events import AgentEvent

OutcomeT = TypeVar("OutcomeT")
Run = Callable[[], Generator[AgentEvent, None, OutcomeT]]


def run_concurrently(
    runs: Sequence[Run[OutcomeT]], stop: threading.Event
) -> Generator[AgentEvent, None, list[OutcomeT | None]]:
    """Run every generator of ``runs`` in its own thread; yield their events; return their
    return values in order (None for a run that was interrupted or failed)."""
    events: queue.SimpleQueue[tuple[int, AgentEvent | None]] = queue.SimpleQueue()  # None: a run ended
    outcomes: list[OutcomeT | None] = [None] * len(runs)

    def work(index: int, run: Run[OutcomeT]) -> None:
        steps = run()
        try:
            while True:
                events.put((index, next(steps)))
        except StopIteration as finished:
            outcomes[index] = finished.value
        except BaseException:  # interrupted (KeyboardInterrupt from ``stop``) or broken: no outcome
            outcomes[index] = None
        finally:
            events.put((index, None))

    threads = [
        threading.Thread(target=work, args=(i, run), name=f"memagent-call-{i}", daemon=True)
        for i, run in enumerate(runs)
    ]
    for thread in threads:
        thread.start()
    running = len(threads)
    try:
        while running:
            try:
                _, item = events.get(timeout=0.25)
            except queue.Empty:
                continue
            if item is None:
                running -= 1
            else:
                yield item
    except BaseException:
        stop.set()
        for thread in threads:
            thread.join(CANCEL_WAIT_SECONDS)
        raise
    for thread in threads:
        thread.join()
    return outcomes


__all__ = ["run_concurrently"]
