"""The write gate and personal data: refused in every card that can leave this machine or that
the user did not state; only the user's own words in a private place may keep it."""

from __future__ import annotations

import pytest

from memagent.memory.cards import MemoryCard
from memagent.memory.gate import GateConfig, check_card

EMAIL = "Escalations go to maria.lopez@acme-corp.io"
PHONE = "The on-call phone is +44 20 7946 0958"
CARD = "The company card is 4111 1111 1111 1111"
IBAN = "Refunds are paid to GB82 WEST 1234 5698 7654 32"


@pytest.mark.parametrize(
    ("content", "kind"),
    [(EMAIL, "e-mail address"), (PHONE, "phone number"), (CARD, "payment card number"), (IBAN, "IBAN")],
)
def test_a_shared_project_card_refuses_personal_data(content, kind):
    reason = check_card(MemoryCard(content=content, source="user"), GateConfig())
    assert reason is not None and kind in reason and "personal data" in reason
    assert content.split()[-1] not in reason  # the value itself is never echoed


@pytest.mark.parametrize("scope", ["user", "session"])
def test_the_users_own_words_in_a_private_place_may_keep_it(scope):
    assert check_card(MemoryCard(content=EMAIL, source="user", scope=scope), GateConfig()) is None
    assert check_card(MemoryCard(content=EMAIL, source="user"), GateConfig(), private=True) is None


@pytest.mark.parametrize("source", ["assistant", "tool", "import", "repository"])
def test_learned_or_imported_cards_never_keep_it_even_in_private(source):
    """Variant: what extraction, a tool, an import or an MCP client saved is refused anywhere."""
    card = MemoryCard(content=PHONE, source=source, scope="user")
    assert "personal data" in check_card(card, GateConfig(), private=True)


def test_personal_data_in_other_fields_is_named(service):
    """Variant: the backstory and the quote are checked too, and the service refuses the save."""
    result = service.save(
        "The on-call rotation is in PagerDuty", "fact", backstory="Maria (maria.lopez@acme-corp.io) set it up"
    )
    assert result.status == "refused" and "(in backstory)" in result.reason
    assert service.list() == []


def test_a_card_with_a_secret_is_refused_even_in_the_users_own_store(service):
    result = service.save(
        "My npm token is npm_" + "a1B2c3D4e5F6g7H8i9J0a1B2c3D4e5F6g7H8", "fact", "user", source="user"
    )
    assert result.status == "refused" and "npm token" in result.reason
