"""What importing the Anthropic SDK through the adapter costs: not its optional aiohttp transport."""

from __future__ import annotations

import subprocess
import sys

from fakeapi import FakeAnthropic, text

PROBE = """
import gc, sys
from memagent.llm import anthropic as adapter
from memagent.llm.types import ModelRequest, ResponseComplete, text_block
sdk = adapter._sdk()
assert gc.isenabled(), "the garbage collector was left off after the import"
assert "aiohttp" not in sys.modules and sys.modules.get("anthropic._vendor.httpx_aiohttp") is None, "aiohttp was imported"
try:
    sdk.DefaultAioHttpClient()
except RuntimeError as exc:
    print("aiohttp client:", exc)
model = adapter.AnthropicModel("claude-sonnet-4-5", api_key="sk-ant-fake-test-key", base_url=sys.argv[1])
request = ModelRequest(system=[text_block("be brief")], messages=[{"role": "user", "content": [text_block("hi")]}],
                       tools=[], max_tokens=64)
done = [e for e in model.stream(request) if isinstance(e, ResponseComplete)]
print("answer:", done[0].response.content[0]["text"])
"""


def test_the_sdk_loads_without_its_aiohttp_transport_and_still_answers():
    with FakeAnthropic([text("hello from the fake")]) as fake:
        result = subprocess.run([sys.executable, "-c", PROBE, fake.url], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "aiohttp client: To use the aiohttp client you must have installed" in result.stdout
    assert "answer: hello from the fake" in result.stdout
    assert fake.errors == [] and len(fake.requests) == 1


def test_a_collector_the_caller_turned_off_stays_off():
    code = "import gc\nfrom memagent.llm import anthropic\ngc.disable()\nanthropic._sdk()\nprint(gc.isenabled())"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "False", result.stderr
