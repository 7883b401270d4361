"""How memagent gets a Chroma client: the import, the settings, a local or a server client.

The import
    ``import chromadb`` and the modules its embedded client loads when it is created
    (``chromadb.api.rust`` and the telemetry component) are most of a cold ``memory search``.
    About a fifth of that is the ``overrides`` package, which chromadb uses to decorate
    ~160 methods with ``@override``: at class-definition time each decorator disassembles the
    calling frame to find the base classes and compares the two methods' signatures through
    ``typing.get_type_hints`` — a check of chromadb's own code against itself, which cannot
    change between runs of one installed version. :func:`load_chromadb` imports those modules
    with that check replaced by its one observable effect (marking the method as an override,
    which ``overrides.EnforceOverrides`` reads) and puts the original back afterwards, so any
    other use of ``overrides`` in the process is checked as before. When ``overrides`` is absent
    or no longer has the function replaced, the import is the plain one.

Settings
    Telemetry off and ``reset`` refused, for every client memagent makes.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlparse

from memagent.memory.errors import StoreError

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.config import Settings

# What chromadb's embedded client imports when the first client is created.
CLIENT_MODULES = ("chromadb.api.rust", "chromadb.telemetry.product.posthog")
_CHECKER_MODULE = "overrides.overrides"
_CHECKER = "_overrides"
Method = TypeVar("Method", bound=Callable[..., object])


def _mark_override(method: Method, check_signature: bool, check_at_runtime: bool) -> Method:
    """What ``@override`` leaves on a method once its checks pass: the mark, nothing else."""
    method.__override__ = True  # type: ignore[attr-defined]
    return method


@contextlib.contextmanager
def overrides_unchecked() -> Iterator[bool]:
    """While inside, ``@override`` marks methods without checking them; yields whether it does.

    A no-op (yielding ``False``) when ``overrides`` is missing, has changed, or another thread is
    already inside: only the thread that replaced the checker puts it back.
    """
    try:
        module: ModuleType | None = importlib.import_module(_CHECKER_MODULE)
    except ImportError:
        module = None
    original = getattr(module, _CHECKER, None)
    if module is None or not callable(original) or original is _mark_override:
        yield False
        return
    setattr(module, _CHECKER, _mark_override)
    try:
        yield True
    finally:
        setattr(module, _CHECKER, original)


def load_chromadb() -> ModuleType:
    """``chromadb``, with what its embedded client needs imported too (see the module doc)."""
    with overrides_unchecked():
        chromadb = importlib.import_module("chromadb")
        for name in CLIENT_MODULES:
            with contextlib.suppress(ImportError):  # a later chromadb may lay itself out otherwise
                importlib.import_module(name)
    return chromadb


def chroma_settings() -> Settings:
    return load_chromadb().Settings(anonymized_telemetry=False, allow_reset=False)


def local_client(path: str) -> ClientAPI:
    """An embedded client over the index directory ``path``."""
    client: ClientAPI = load_chromadb().PersistentClient(path=path, settings=chroma_settings())
    return client


def http_client(url: str) -> ClientAPI:
    """A client of the Chroma server at ``url``, checked to answer."""
    parsed = urlparse(url if "://" in url else f"http://{url}")
    if not parsed.hostname:
        raise StoreError(f"MEMAGENT_CHROMA_URL {url!r} has no host")
    ssl = parsed.scheme == "https"
    port = parsed.port or (443 if ssl else 8000)
    client: ClientAPI = load_chromadb().HttpClient(host=parsed.hostname, port=port, ssl=ssl, settings=chroma_settings())
    client.heartbeat()
    return client


__all__ = ["CLIENT_MODULES", "chroma_settings", "http_client", "load_chromadb", "local_client", "overrides_unchecked"]
