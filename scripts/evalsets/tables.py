"""Generated tables with one-cell questions, as PDF (ruled and borderless), DOCX, HTML and Markdown files.

Each table lists people (unique names) with a few attributes; a question asks for one attribute of one
person ("What is the office phone extension of Ingrid Solberg?"), so its answer is one cell and the chunk
that answers it must hold that person's row and the header naming the column. Sizes vary from a few rows
to several times the model window. XLSX: add a writer here once the spreadsheet parser is on main
(``formats``: ``WRITERS["xlsx"]``).
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from dataclasses import dataclass
from html import escape

FIRST = ("Ingrid Sven Astrid Bjorn Freya Leif Sigrid Torvald Runa Halvard Solveig Eirik Dagny Gunnar Hilde "
         "Ivar Kari Magnus Nora Olav Ragna Stig Tove Ulf Vigdis Arne Brita Einar Frode Greta").split()
LAST = ("Solberg Dahl Lund Berg Haugen Strand Moen Lie Bakke Vik Nygaard Holm Aas Foss Rud Eide Brekke Sand "
        "Hagen Myhre Tangen Lien Aasen Hauge Kvam Sæther Ruud Ness Engen Nilsen").split()
DEPARTMENTS = ("Logistics Finance Research Legal Marketing Procurement Security Facilities Training Support").split()
CITIES = ("Oslo Bergen Tromsø Stavanger Trondheim Bodø Ålesund Drammen Hamar Molde").split()
HEADER = ["Employee", "Department", "Office city", "Phone extension", "Badge colour", "Start year"]
QUESTIONS = {
    2: "In which office city does {name} work?",
    3: "What is the phone extension of {name}?",
    4: "What badge colour does {name} have?",
    5: "In which year did {name} start?",
}
COLOURS = "red green blue amber violet teal silver bronze".split()


@dataclass(frozen=True)
class TableDoc:
    """One generated table document and its questions (question, the answering row's first cell, column)."""

    name: str
    kind: str
    data: bytes
    header: list[str]
    rows: list[list[str]]
    questions: list[tuple[str, int, int]]  # (question, row index, column index)


def table_rows(names: list[str], rng: random.Random) -> list[list[str]]:
    return [[name, rng.choice(DEPARTMENTS), rng.choice(CITIES), str(rng.randint(1000, 9999)),
             rng.choice(COLOURS), str(rng.randint(1995, 2025))] for name in names]


def pdf_bytes(rows: list[list[str]], borders: str) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=9)
    pdf.add_page()
    pdf.multi_cell(0, 5, "Staff directory. The table below lists every employee with their department and office.")
    pdf.ln(2)
    with pdf.table(borders_layout=borders, col_widths=(40, 30, 28, 26, 24, 22), text_align="LEFT") as table:
        for row in [HEADER, *rows]:
            cells = table.row()
            for value in row:
                cells.cell(value.replace("ø", "o").replace("Å", "A").replace("æ", "ae"))
    return bytes(pdf.output())


def docx_bytes(rows: list[list[str]]) -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph("Staff directory. The table below lists every employee with their department and office.")
    table = document.add_table(rows=len(rows) + 1, cols=len(HEADER))
    for r, row in enumerate([HEADER, *rows]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def html_bytes(rows: list[list[str]]) -> bytes:
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>" for row in rows)
    return (f"<html><body><h1>Staff directory</h1><p>Every employee with their department and office.</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>").encode()


WRITERS: dict[str, Callable[[list[list[str]]], bytes]] = {
    "pdf-ruled": lambda rows: pdf_bytes(rows, "ALL"),
    "pdf-borderless": lambda rows: pdf_bytes(rows, "NONE"),
    "docx": docx_bytes,
    "html": html_bytes,
}
EXTENSIONS = {"pdf-ruled": "pdf", "pdf-borderless": "pdf", "docx": "docx", "html": "html"}


def generate(sizes: tuple[int, ...] = (5, 12, 30, 60, 100), questions_per_table: int = 4,
             seed: int = 31) -> list[TableDoc]:
    """One document per writer and size; questions pick random rows and columns. Every name is used once
    in the whole set, so a question has one right row."""
    rng = random.Random(seed)
    pool = rng.sample([f"{f} {s}" for f in FIRST for s in LAST], len(WRITERS) * sum(sizes))
    docs: list[TableDoc] = []
    for kind, write in WRITERS.items():
        for size in sizes:
            rows = table_rows(pool[:size], rng)
            pool = pool[size:]
            if kind.startswith("pdf"):  # the PDF's core font has no ø/æ/Å
                rows = [[v.replace("ø", "o").replace("Å", "A").replace("æ", "ae") for v in row] for row in rows]
            asked = []
            for r in rng.sample(range(size), min(questions_per_table, size)):
                column = rng.choice(sorted(QUESTIONS))
                asked.append((QUESTIONS[column].format(name=rows[r][0]), r, column))
            docs.append(TableDoc(f"{kind}-{size}.{EXTENSIONS[kind]}", kind, write(rows), HEADER, rows, asked))
    return docs
