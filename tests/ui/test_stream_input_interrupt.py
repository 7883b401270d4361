"""``--input-format stream-json`` reads stdin while a turn runs: a driver's ``interrupt`` stops
that turn at once, the next messages still run, and the run's exit code does not count the
interrupted turn as a failure."""

from __future__ import annotations

import io
import json
import os
import threading

from pydantic import BaseModel

from memagent.llm.scripted import reply, tool_call
from memagent.permissions import Effect, declares
from memagent.tools.base import ToolContext, tool
from memagent.ui.stream_input import run_stream_input


class NoInput(BaseModel):
    pass


def _line(obj: dict) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def _user(text: str) -> bytes:
    return _line({"type": "user", "message": {"role": "user", "content": text}})


def _interrupt(request_id: str) -> bytes:
    return _line({"type": "control_request", "request_id": request_id, "request": {"subtype": "interrupt"}})


def test_an_interrupt_read_mid_turn_stops_it_and_the_next_message_runs(make_agent, session_of):
    read_end, write_end = os.pipe()
    writer = os.fdopen(write_end, "wb", buffering=0)
    cancelled = threading.Event()

    @tool("long_job", NoInput, effects=declares(Effect.READ))
    def long_job(args: NoInput, ctx: ToolContext) -> str:
        """Stands in for a long command: the driver interrupts while it runs."""
        writer.write(_interrupt("req_stop"))
        cancelled.wait(timeout=0.5)
        return "finished"

    agent = make_agent(
        [reply("Working.", tool_call("long_job", {}, id="toolu_long")), reply("Second.")],
        extra_tools=[long_job],
    )
    writer.write(_user("start the job"))
    out = io.StringIO()
    done: list[int] = []

    def feed_the_rest() -> None:  # the next message comes once the interrupt was answered
        while '"req_stop"' not in out.getvalue():
            threading.Event().wait(0.02)
        writer.write(_user("and now?"))
        writer.close()

    feeder = threading.Thread(target=feed_the_rest)
    feeder.start()
    with os.fdopen(read_end, "rb") as stdin:
        done.append(run_stream_input(session_of(agent), stdin, out, io.StringIO()))
    feeder.join(timeout=10)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    [ack] = [line for line in lines if line["type"] == "control_response"]
    assert ack["response"]["request_id"] == "req_stop" and ack["response"]["subtype"] == "success"
    results = [line for line in lines if line["type"] == "result"]
    assert [(r["subtype"], r["terminal_reason"]) for r in results] == [
        ("error_during_execution", "aborted_streaming"),
        ("success", "completed"),
    ]
    assert results[1]["result"] == "Second."
    assert done == [0]  # a driver's interrupt is not a failed turn
    assert len(agent.model.requests) == 2  # the stopped turn asked the model nothing after its tool
