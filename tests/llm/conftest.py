"""Make the fake API fixture available here even before the root conftest loads the plugin."""

from fakeapi.fixtures import fake_api, pytest_configure  # noqa: F401  (re-exported fixture and hook)
