"""Which model built a store's vector index: another model's index is refused (the user is told
to reindex); another variant of the same model (fp32 and int8 vectors differ, never mixed) is
dropped so its cards are embedded again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memagent.memory.vector_index import EmbedderInfo, EmbedderMismatch, same_model

if TYPE_CHECKING:
    from memagent.memory.store import Store


def check_index_embedder(store: Store, embedder: EmbedderInfo) -> None:
    """Refuse an index built by another model; drop one built by another variant of this
    model (fp32 and int8 vectors differ: never mixed), so its cards are embedded again."""
    recorded = store.catalog.get_meta("embedder") if store.catalog.exists else None
    wanted = f"{embedder.model_id}:{embedder.dim}"
    if recorded is None or recorded == wanted:
        return
    model, _, dim = recorded.rpartition(":")
    variant = embedder.dim > 0 and dim == str(embedder.dim) and same_model(model, embedder.model_id)
    if variant and not store.is_remote:  # a shared server's index is not this process's to drop
        _drop_vectors_of(store, model, embedder)
        return
    raise EmbedderMismatch(
        f"the {store.label} memory index was built with {recorded.replace(':', ' (dim ')}) but the "
        f"active embedder is {embedder.describe()}; run `memagent memory reindex`"
    )


def _drop_vectors_of(store: Store, recorded: str, embedder: EmbedderInfo) -> None:
    index = store.vector_index(embedder, create=True)
    with store.locked():
        if index is not None:
            index.embedder = embedder
            index.replace_all([])
        with store.catalog.transaction() as db:
            store.catalog.forget_vectors(db)
            store.catalog.set_meta(db, "embedder", f"{embedder.model_id}:{embedder.dim}")
            store.note_generation(store.catalog.bump_generation(db))
    store.notices.append(
        f"the {store.label} memory index held vectors of {recorded}; re-embedding its "
        f"{store.catalog.count()} cards with {embedder.name}"
    )
