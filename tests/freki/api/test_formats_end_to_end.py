"""Office files and e-mails through the real Freki: indexed over gRPC as bytes, retrieved with their slide,
sheet and header metadata (real embedding model, real Qdrant engine, real parser sandbox)."""

from __future__ import annotations

import uuid

import pytest
from wolf.v1 import common_pb2, freki_pb2

from tests.freki.ingest.office_files_support import build_eml, build_pptx, build_xlsx

pytestmark = pytest.mark.integration

DECK = [
    {"title": "Welcome", "body": ["The onboarding deck for new staff."]},
    {"title": "Badges", "body": ["Visitor badges are collected at the Fjellvegen reception desk."],
     "notes": "Remind people that badges expire after one day."},
]
BOOK = {"Prices": [["Item", "Price"], ["Espresso", 3], ["Cardamom bun", 4]],
        "Rooms": [["Room", "Capacity", "Floor"], ["Hugin", 8, 2], ["Munin", 14, 3], ["Sleipnir auditorium", 120, 1]]}


def _index(stub, doc_id: str, data: bytes) -> freki_pb2.IndexDocumentResponse:  # type: ignore[no-untyped-def]
    return stub.IndexDocument(freki_pb2.IndexDocumentRequest(
        request_id=uuid.uuid4().hex, document_id=doc_id, source=f"inbox/{doc_id}", content_bytes=data), timeout=120)


def _top(stub, prompt: str) -> common_pb2.RetrievedDocument:  # type: ignore[no-untyped-def]
    response = stub.RetrieveContext(common_pb2.WolfRequest(
        request_id=uuid.uuid4().hex, model_type=common_pb2.RAG, prompt=prompt,
        retrieval=common_pb2.RetrievalOptions(top_k=3)), timeout=60)
    return response.rag_context.documents[0]


@pytest.fixture(scope="module")
def indexed(freki_stub):  # type: ignore[no-untyped-def]
    attachment = build_xlsx({"Budget": [["Line", "Amount"], ["Sauna heater repair", 1450]]})
    mail = build_eml("Hi Bob,\n\nthe sauna on the roof terrace is closed until Friday for repairs.",
                     subject="Sauna closed", attachments=[("budget.xlsx", attachment, "application/octet-stream")])
    return {doc_id: _index(freki_stub, doc_id, data) for doc_id, data in
            (("onboarding.pptx", build_pptx(DECK)), ("facilities.xlsx", build_xlsx(BOOK)), ("sauna.eml", mail))}


def test_each_document_is_indexed(indexed) -> None:  # type: ignore[no-untyped-def]
    for response in indexed.values():
        assert response.outcome == freki_pb2.INDEX_OUTCOME_CREATED and response.chunk_count >= 1


def test_a_slide_passage_comes_back_with_its_slide_number(freki_stub, indexed) -> None:  # type: ignore[no-untyped-def]
    hit = _top(freki_stub, "where are visitor badges collected")
    assert hit.document_id == "onboarding.pptx"
    assert "Fjellvegen reception desk" in hit.content and "badges expire after one day" in hit.content
    assert hit.metadata["slide"] == "2"
    assert hit.metadata["section"] == "Badges"


def test_a_sheet_passage_comes_back_with_its_sheet_name(freki_stub, indexed) -> None:  # type: ignore[no-untyped-def]
    hit = _top(freki_stub, "capacity of the Sleipnir auditorium room")
    assert hit.document_id == "facilities.xlsx"
    assert "| Sleipnir auditorium | 120 | 1 |" in hit.content
    assert hit.metadata["sheet"] == "Rooms"


def test_an_email_comes_back_with_its_headers_and_attachment(freki_stub, indexed) -> None:  # type: ignore[no-untyped-def]
    hit = _top(freki_stub, "is the roof terrace sauna open")
    assert hit.document_id == "sauna.eml"
    assert hit.metadata["subject"] == "Sauna closed"
    assert hit.metadata["from"] == "Ann Example <ann@example.com>"
    attached = _top(freki_stub, "sauna heater repair amount")
    assert attached.document_id == "sauna.eml"
    assert attached.metadata["sheet"] == "Budget" and "1450" in attached.content
