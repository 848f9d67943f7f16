"""How long PDF parsing takes with table detection: pypdf alone, pypdf + pdfplumber on the pages that hint at
a table (the default), and pdfplumber on every page, on generated reports.

Each report has ``--pages`` pages of prose, one in ``--table-every`` with a ruled table and one in
``--table-every`` (offset) with a borderless one; headings are underlined with a drawn rule, as many
reports do. Asserts nothing; prints seconds and pages/s.

    .venv/bin/python -m scripts.bench.pdf_tables --pages 300 --table-every 10
"""

from __future__ import annotations

import argparse
import io
import random
import time

import pdfplumber
from fpdf import FPDF

from freki.ingest.parsing import ParseLimits, parse_document

WORDS = ("supplier warehouse invoice quarter delivery contract payment schedule audit inventory shipment "
         "customer region revenue forecast budget approval review").split()


def report(pages: int, table_every: int, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    for number in range(pages):
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 12)
        pdf.cell(0, 8, f"Section {number + 1}", new_x="LMARGIN", new_y="NEXT")
        pdf.line(10, pdf.get_y(), 200, pdf.get_y())
        pdf.set_font("Helvetica", size=10)
        for _ in range(4 if number % table_every in (0, table_every // 2) else 9):
            sentences = [" ".join(rng.choices(WORDS, k=rng.randint(8, 16))).capitalize() + "." for _ in range(4)]
            pdf.multi_cell(0, 5, " ".join(sentences))
            pdf.ln(2)
        if number % table_every in (0, table_every // 2):
            borders = "ALL" if number % table_every == 0 else "NONE"
            with pdf.table(borders_layout=borders, col_widths=(30, 50, 30, 60), text_align="LEFT") as table:
                for i in range(15):
                    row = table.row()
                    for value in (f"PN-{number}-{i}", rng.choice(WORDS), f"{rng.randint(1, 99)}.00", rng.choice(WORDS)):
                        row.cell(value)
    return bytes(pdf.output())


def timed(label: str, pages: int, run) -> None:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - started
    print(f"{label:<44} {seconds:7.2f} s  {pages / seconds:7.1f} pages/s  {result}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--table-every", type=int, default=10)
    args = parser.parse_args()
    data = report(args.pages, args.table_every)
    print(f"{args.pages} pages, {len(data):,} bytes, a ruled and a borderless table every {args.table_every} pages")

    def header_count(limits: ParseLimits) -> str:
        text = parse_document(data, source="report.pdf", limits=limits).text
        return f"{text.count('| --- |')} separator cells"

    timed("pypdf only (limits.pdf_table_pages=0)", args.pages, lambda: header_count(ParseLimits(pdf_table_pages=0)))
    timed("pypdf + pdfplumber on hinted pages", args.pages, lambda: header_count(ParseLimits()))

    def plumber_all() -> str:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            found = 0
            for page in pdf.pages:
                found += len(page.find_tables())
                page.extract_text()
                page.close()
        return f"{found} ruled tables"

    timed("pdfplumber on every page (text + tables)", args.pages, plumber_all)


if __name__ == "__main__":
    main()
