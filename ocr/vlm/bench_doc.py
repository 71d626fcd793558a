"""A born-digital PDF of N distinct finance pages for throughput benchmarks.

Every page differs (page number, figures drawn from a seeded generator), so a server's prefix or
multimodal cache cannot answer a page from a previous one; each page has a heading, two paragraphs
and a 6x4 table, like the project's sample document (:mod:`folioflow.ocr.samples`).
"""

from __future__ import annotations

import random
from pathlib import Path

__all__ = ["write_bench_pdf"]


def write_bench_pdf(path: str | Path, pages: int, seed: int = 7) -> Path:
    """Write a ``pages``-page letter-size PDF to ``path`` and return the path (parents created)."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.pdfgen import canvas

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    pdf = canvas.Canvas(str(path), pagesize=LETTER)
    width, height = LETTER
    for number in range(1, pages + 1):
        revenue, growth = rng.randint(1000, 9999), rng.randint(1, 40)
        y = height - 72
        pdf.setFont("Helvetica-Bold", 16)
        pdf.drawString(72, y, f"Segment review {number}: fiscal {2000 + number % 26}")
        pdf.setFont("Helvetica", 11)
        for line in (
            f"Revenue grew {growth}% to ${revenue:,} million, driven by advisory fees in region {number}.",
            f"Operating margin was {rng.uniform(5, 30):.1f}% "
            f"and headcount reached {rng.randint(100, 9000):,}.",
            f"The board approved a dividend of ${rng.uniform(0.1, 3):.2f} per share on page {number}.",
        ):
            y -= 24
            pdf.drawString(72, y, line)
        y -= 36
        rows = [["Line item", "FY-1", "FY", "Change"]] + [
            [
                f"Item {number}.{i}",
                f"{rng.randint(100, 999):,}",
                f"{rng.randint(100, 999):,}",
                f"{rng.randint(-20, 40)}%",
            ]
            for i in range(1, 6)
        ]
        for row in rows:
            for col, cell in enumerate(row):
                pdf.drawString(72 + col * 110, y, cell)
            y -= 18
        pdf.setFont("Helvetica", 8)
        pdf.drawString(72, 36, f"Benchmark document - page {number} of {pages}")
        pdf.showPage()
    pdf.save()
    return path
