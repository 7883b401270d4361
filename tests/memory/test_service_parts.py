"""The memory service is composed, not stacked: one core, parts that hold it, no part a base
class of another, and the service's methods are its parts' own (one object answers for each)."""

from __future__ import annotations

from memagent.memory.core import MemoryCore
from memagent.memory.erasure import Erasure
from memagent.memory.injection import Injection
from memagent.memory.reading import Reading
from memagent.memory.saving import Saving
from memagent.memory.service import MemoryService
from memagent.memory.store import Store
from memagent.memory.store_forgetting import StoreForgetting
from memagent.memory.transfer import Transfer

PARTS = (MemoryCore, Saving, Reading, Injection, Erasure, Transfer, MemoryService, Store, StoreForgetting)


def test_no_part_inherits_from_another():
    assert {cls.__name__: cls.__bases__ for cls in PARTS} == {cls.__name__: (object,) for cls in PARTS}


def test_every_part_holds_the_one_core_and_the_service_answers_with_them(service):
    parts = (service.saving, service.reading, service.injection, service.erasure, service.transfer)
    assert all(part.core is service.core for part in parts)
    assert service.injection.reading is service.reading and service.transfer.saving is service.saving
    bound = {
        "save": service.saving,
        "submit": service.saving,
        "search": service.reading,
        "context_for_turn": service.injection,
        "forget": service.erasure,
        "import_cards": service.transfer,
        "get": service.core,
    }
    assert {name: getattr(service, name).__self__ for name in bound} == bound
    assert service.core.after_sync == service.saving.after_sync  # arrivals are judged on every sync
    for store in service.core.stores.values():
        assert store.forgetting.store is store


def test_settings_set_on_the_service_reach_the_core(service):
    service.inline_embed_max = 7
    service.hold_repository = True
    assert service.core.inline_embed_max == 7 and service.core.hold_repository
