"""Neighbour chunks and overlap-free chunk text over gRPC, with the real model and Qdrant engine."""

from __future__ import annotations

import grpc
import pytest

from tests.freki.api.test_service import index, retrieve

pytestmark = pytest.mark.integration

TOPICS = [
    ("harbour", "The harbour master logs every ship that enters the bay before dawn."),
    ("lighthouse", "The lighthouse keeper trims the wick and polishes the great lens each evening."),
    ("bakery", "The village bakery sells rye loaves and cinnamon buns from six in the morning."),
    ("zeppelin", "A silver zeppelin named Quillfeather moors at the old mast every second Tuesday."),
    ("orchard", "The orchard on the hill grows twelve kinds of apples and three kinds of pears."),
    ("observatory", "Astronomers at the observatory catalogue comets with a brass refracting telescope."),
    ("tannery", "The tannery by the river dyes leather in deep shades of oxblood and ochre."),
]


def _paragraph(topic: str, sentence: str) -> str:
    filler = " ".join(f"The {topic} story goes on with detail number {i} about the {topic}." for i in range(6))
    return f"{sentence} {filler}"


DOCUMENT = "\n\n".join(_paragraph(t, s) for t, s in TOPICS)


@pytest.fixture(scope="module")
def town(freki_stub):  # type: ignore[no-untyped-def]
    index(freki_stub, "town.md", DOCUMENT, tenant_id="nb")
    index(freki_stub, "town.md", "Another tenant's town has a zeppelin too, a red one.", tenant_id="nb-other")
    found = retrieve(freki_stub, "every chunk", tenant_id="nb", top_k=50, score_threshold=0.0, neighbours=0)
    chunks = sorted(found.rag_context.documents, key=lambda d: d.chunk_index)
    assert len(chunks) >= 5, "the test document must split into several chunks"
    return chunks


def test_neighbours_follow_their_hit_in_document_order(freki_stub, town) -> None:  # type: ignore[no-untyped-def]
    found = retrieve(freki_stub, "silver zeppelin Quillfeather moors at the mast", tenant_id="nb", top_k=1,
                     score_threshold=0.0, neighbours=1).rag_context.documents
    hit = next(d for d in found if not d.neighbour_of)
    assert "Quillfeather" in hit.content
    assert [d.chunk_index for d in found] == list(range(hit.chunk_index - 1, hit.chunk_index + 2))
    for doc in found:
        if doc.chunk_id != hit.chunk_id:
            assert doc.neighbour_of == hit.chunk_id
            assert doc.relevance_score == pytest.approx(hit.relevance_score)
    assert "red one" not in " ".join(d.content for d in found), "a neighbour never crosses tenants"


def test_no_chunk_twice_and_hits_keep_their_place(freki_stub, town) -> None:  # type: ignore[no-untyped-def]
    found = retrieve(freki_stub, "zeppelin orchard apples tannery leather", tenant_id="nb", top_k=3,
                     score_threshold=0.0, neighbours=2).rag_context.documents
    ids = [d.chunk_id for d in found]
    assert len(ids) == len(set(ids))
    hits = [d for d in found if not d.neighbour_of]
    assert len(hits) == min(3, len(town))
    scores = [d.relevance_score for d in found]
    assert scores == sorted(scores, reverse=True), "neighbours carry their hit's score, the list stays sorted"
    assert {d.chunk_id for d in found} <= {c.chunk_id for c in town}


def test_overlap_free_text_stitches_the_document(town) -> None:  # type: ignore[no-untyped-def]
    assert town[0].overlap_chars == 0
    assert any(c.overlap_chars > 0 for c in town[1:]), "the chunker's overlap is reported"
    for before, chunk in zip(town, town[1:], strict=False):
        repeated = chunk.content[: chunk.overlap_chars].strip()
        assert before.content.rstrip().endswith(repeated)
    stitched = " ".join(c.content[c.overlap_chars:].strip() for c in town)
    for _, sentence in TOPICS:
        assert stitched.count(sentence) == 1, "every sentence once: no overlap repeated"


def test_too_many_neighbours_is_refused_naming_the_setting(freki_stub, town) -> None:  # type: ignore[no-untyped-def]
    for bad in (-1, 99):
        with pytest.raises(grpc.RpcError) as err:
            retrieve(freki_stub, "zeppelin", tenant_id="nb", neighbours=bad)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "retrieval.max_neighbours" in (err.value.details() or "")


def test_odin_asks_for_neighbours_and_stitches_them(freki_server, town) -> None:  # type: ignore[no-untyped-def]
    from odin_client import OdinClient, OdinSettings

    handle, _ = freki_server
    with OdinClient(OdinSettings(freki_target=f"127.0.0.1:{handle.port}", tenant_id="nb")) as odin:
        found = odin.retrieve("silver zeppelin Quillfeather moors at the mast", top_k=1, score_threshold=0.0,
                              neighbours=1)
    (hit,) = [s for s in found.sources if not s.neighbour_of]
    assert [s.neighbour_of for s in found.sources if s is not hit] == [hit.chunk_id] * (len(found.sources) - 1)
    assert len(found.sources) == 3
    text = " ".join(s.content[s.overlap_chars:].strip() for s in sorted(found.sources, key=lambda s: s.chunk_index))
    assert text.count("Quillfeather") == 1
