"""The vector cache beside the cards: a clone does not embed what another machine embedded, a
poisoned cache can at worst mis-rank, private cards never get a line, forgetting removes one."""

from __future__ import annotations

import base64
import shutil
import struct
import subprocess

import numpy as np
import pytest

from memagent.config import Settings, project_paths
from memagent.embedding.vector_cache import VectorCache
from memagent.memory.catalog import digest_of

TEXTS = [
    "Releases are tagged vX.Y.Z on main",
    "The staging database is called blue-otter",
    "Feature flags are stored in Unleash",
    "Deploys go out on Tuesdays after the standup",
]


class CountingEmbedder:
    """The real embedder, counting the texts it embeds."""

    def __init__(self, inner):
        self.inner, self.texts = inner, []
        self.name, self.dim, self.model_id = inner.name, inner.dim, inner.model_id

    def embed(self, texts):
        self.texts.extend(texts)
        return self.inner.embed(texts)


def _clone(paths, tmp_path):
    if shutil.which("git") is None:
        pytest.fail("git is needed for this test")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", str(paths.root)], check=True)
    subprocess.run([*git, "-C", str(paths.root), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(paths.root), "commit", "-qm", "cards"], check=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(paths.root), str(clone)], check=True)
    return clone


def test_a_clone_uses_the_committed_vectors_instead_of_embedding(open_service, paths, tmp_path, embedder):
    service = open_service(settings=Settings(memory_commit_vectors=True))  # the team commits the cache
    cards = [service.save(text, "fact").card for text in TEXTS]
    private = service.save("My local checkout uses a venv in .venv", "fact", private=True).card
    service.close()
    shards = list((paths.memory / "vectors" / embedder.model_id).glob("*.vec"))
    assert shards and (paths.memory / "vectors" / ".gitattributes").is_file()
    assert digest_of(private.content) not in "".join(s.read_text() for s in shards)  # private stays out
    clone = _clone(paths, tmp_path)
    assert list((clone / ".memory" / "vectors").rglob("*.vec"))  # committed with the cards
    counting = CountingEmbedder(embedder)
    cloned = open_service(paths=project_paths(clone), embedder=counting, check_embedder=False)
    hits = cloned.search("how are releases tagged?", k=1)
    assert [h.card.id for h in hits] == [cards[0].id] and hits[0].parts["dense"] > 0.5
    assert counting.texts == ["how are releases tagged?"]  # only the query was embedded
    store = cloned.core.stores["project"]
    assert store.vectors.counts() == (len(TEXTS), 0) and store.catalog.pending_vectors() == 0
    original = embedder.embed([TEXTS[0]])[0]
    cached = np.asarray(store.vectors.vectors([cards[0].id])[cards[0].id])
    assert float(original @ cached) > 0.9999  # int8 with a scale per vector: cosines move by ~1e-5


def _line(key: str, raw: bytes) -> str:
    return f"{key} {base64.b64encode(raw).decode()}\n"


def test_a_poisoned_cache_can_at_worst_mis_rank(tmp_path, embedder):
    cache = VectorCache(tmp_path / "vectors", embedder.model_id, embedder.dim)
    good = embedder.embed([TEXTS[1]])[0]
    keys = [digest_of(t) for t in TEXTS]
    cache.put({keys[0]: good})
    shard = cache.folder / f"{keys[1][:2]}.vec"
    scale = struct.pack("<f", 0.01)
    payload = np.full(embedder.dim, 5, dtype=np.int8).tobytes()
    hostile = [
        _line(keys[1], scale + payload[:-1]),  # one byte short
        _line(keys[1], struct.pack("<f", float("nan")) + payload),  # NaN scale
        _line(keys[1], struct.pack("<f", -1.0) + payload),  # negative scale
        _line(keys[1], scale + bytes(embedder.dim)),  # all zeros
        f"{keys[1]} !!!not-base64!!!\n",
        f"{keys[1][:-1]}Z {base64.b64encode(scale + payload).decode()}\n",  # not a hash
        "\x00\xff garbage line\n",
    ]
    existing = shard.read_text() if shard.exists() else cache._header()
    shard.write_text(existing + "".join(hostile))
    assert set(cache.get(keys)) == {keys[0]}
    np.testing.assert_allclose(cache.get([keys[0]])[keys[0]], good, atol=2e-2)
    (cache.folder / f"{keys[2][:2]}.vec").write_text(  # another model's header: the whole file ignored
        f"memagent-vectors 1 some-other-model {embedder.dim}\n" + _line(keys[2], scale + payload)
    )
    assert cache.get([keys[2]]) == {}
    wrong_dim = VectorCache(tmp_path / "vectors", embedder.model_id, 8)
    assert wrong_dim.get(keys) == {}


def test_a_poisoned_entry_in_a_clone_mis_ranks_but_never_crashes(open_service, paths, tmp_path, embedder):
    service = open_service(settings=Settings(memory_commit_vectors=True))  # the team commits the cache
    cards = [service.save(text, "fact").card for text in TEXTS]
    service.close()
    cache = VectorCache(paths.memory / "vectors", embedder.model_id, embedder.dim)
    key = digest_of(TEXTS[0])
    shard = cache.folder / f"{key[:2]}.vec"
    lines = [ln for ln in shard.read_text().splitlines(keepends=True) if not ln.startswith(key)]
    decoy = embedder.embed(["a recipe for lemon cake with poppy seeds"])[0]
    shard.write_text("".join(lines))
    cache.put({key: decoy})  # a teammate's poisoned vector for the release card
    with shard.open("a") as fh:
        fh.write(f"{key[:2]}{'0' * 22} {'A' * 50}\n\x00\x01\n")
    clone = _clone(paths, tmp_path)
    cloned = open_service(paths=project_paths(clone), check_embedder=False)
    hits = {h.card.id: h for h in cloned.search("how are releases tagged?", k=4)}
    assert cards[0].id in hits and hits[cards[0].id].parts["dense"] < 0.3  # mis-ranked, found lexically
    assert cloned.notices() == []
    assert cloned.reindex() == len(TEXTS)  # embeds afresh; its line now wins over the poisoned one
    hits = {h.card.id: h for h in cloned.search("how are releases tagged?", k=4)}
    assert hits[cards[0].id].parts["dense"] > 0.5


def test_forgetting_removes_the_cached_vector(service, paths, embedder):
    card = service.save("The vault codename is Quetzal-lantern-5521", "fact").card
    other = service.save("The audit happens every quarter", "fact").card
    folder = paths.memory / "local" / "vectors" / embedder.model_id  # local unless the team commits it
    assert digest_of(card.content) in "".join(p.read_text() for p in folder.glob("*.vec"))
    assert service.forget([card.id]) == 1
    text = "".join(p.read_text() for p in folder.glob("*.vec"))
    assert digest_of(card.content) not in text and digest_of(other.content) in text


def test_int8_and_fp32_vectors_never_share_an_index(open_service, paths, embedder, int8_embedder):
    service = open_service()  # fp32
    cards = [service.save(text, "fact").card for text in TEXTS]
    service.close()
    switched = open_service(embedder=int8_embedder, check_embedder=False)
    hits = switched.search("how are releases tagged?", k=1)
    assert [h.card.id for h in hits] == [cards[0].id]
    store = switched.core.stores["project"]
    assert store.catalog.get_meta("embedder") == f"{int8_embedder.model_id}:384"
    assert store.vectors.stored_embedder().model_id == int8_embedder.model_id
    assert store.vectors.counts() == (len(TEXTS), 0) and store.catalog.pending_vectors() == 0
    stored = np.asarray(store.vectors.vectors([cards[1].id])[cards[1].id])
    fp32 = embedder.embed([TEXTS[1]])[0]
    assert 0.97 < float(stored @ fp32) < 0.9999  # re-embedded by int8: near the fp32 vector, not it
    assert any("re-embedding" in n and "int8" in n for n in switched.notices())
    switched.close()
    back = open_service()  # and back to fp32: dropped again, never mixed
    back.search("how are releases tagged?")
    assert back.core.stores["project"].vectors.stored_embedder().model_id == embedder.model_id
