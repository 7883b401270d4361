"""pytest plugin: ``pytest_plugins = ["fakeapi.fixtures"]`` gives the ``fake_api`` fixture.

``fake_api`` is a started, empty :class:`FakeAnthropic` (``fake_api.add(...)`` to script it) and
``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY`` are set to point at it. At teardown it asserts
that no request broke an API invariant and the script never ran dry; a test that provokes such
errors on purpose opts out with ``@pytest.mark.fake_api_errors_ok``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakeapi.server import FakeAnthropic

FAKE_KEY = "sk-ant-fake-test-key"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fake_api_errors_ok: the test expects the fake API to record errors")


@pytest.fixture
def fake_api(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        yield fake
    if request.node.get_closest_marker("fake_api_errors_ok") is None:
        assert fake.errors == [], "the fake Anthropic API saw invalid requests:\n" + "\n".join(fake.errors)
