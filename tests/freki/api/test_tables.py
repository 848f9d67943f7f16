"""Tables end to end through the real Freki (parser sandbox, chunker, model, engine): a question whose answer
is one cell of a long PDF table retrieves a chunk holding that row and the header."""

from __future__ import annotations

import uuid

import pytest
from fpdf import FPDF
from wolf.v1 import common_pb2, freki_pb2

pytestmark = pytest.mark.integration

HEADER = ["Employee", "Department", "Office city", "Phone extension"]
FIRST = "Ingrid Sven Astrid Bjorn Freya Leif Sigrid Torvald Runa Halvard".split()
LAST = "Solberg Dahl Lund Berg Haugen Strand Moen".split()
ROWS = [[f"{f} {s}", ["Logistics", "Finance", "Legal"][i % 3], ["Oslo", "Bergen", "Hamar"][i % 3], str(4000 + 7 * i)]
        for i, (f, s) in enumerate((f, s) for s in LAST for f in FIRST)]


def staff_pdf() -> bytes:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=9)
    pdf.add_page()
    pdf.multi_cell(0, 5, "Staff directory. Every employee with their department, office and phone extension.")
    with pdf.table(borders_layout="ALL", text_align="LEFT") as table:
        for row in [HEADER, *ROWS]:
            cells = table.row()
            for value in row:
                cells.cell(value)
    return bytes(pdf.output())


def test_a_one_cell_answer_retrieves_its_row_with_the_header(freki_stub) -> None:  # type: ignore[no-untyped-def]
    response = freki_stub.IndexDocument(freki_pb2.IndexDocumentRequest(
        request_id=uuid.uuid4().hex, document_id="staff.pdf", content_bytes=staff_pdf(), source="staff.pdf"),
        timeout=120)
    assert response.chunk_count >= 3  # 70 rows are several model windows
    name, _, _, extension = ROWS[45]
    top = freki_stub.RetrieveContext(common_pb2.WolfRequest(
        request_id=uuid.uuid4().hex, model_type=common_pb2.RAG, prompt=f"What is the phone extension of {name}?",
        retrieval=common_pb2.RetrievalOptions(top_k=3)), timeout=30).rag_context.documents
    row = f"| {name} | {ROWS[45][1]} | {ROWS[45][2]} | {extension} |"
    holding = [d for d in top if row in d.content.split("\n")]
    assert holding, [d.content[:200] for d in top]
    assert holding[0].content.split("\n")[0] == "| " + " | ".join(HEADER) + " |"
    assert holding[0].metadata["page"] in ("1", "2")
