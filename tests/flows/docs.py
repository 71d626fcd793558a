"""Small generated PDFs for the flows tests (reportlab): one heading and paragraphs per page."""

from __future__ import annotations

from pathlib import Path


def write_memo(path: str | Path, title: str, paragraphs: list[str], pages: int = 1) -> Path:
    """A born-digital PDF with ``pages`` pages, each a heading ``title (page n)`` and the
    ``paragraphs``. Returns the path (parents created)."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    styles = getSampleStyleSheet()
    story = []
    for n in range(1, pages + 1):
        story.append(Paragraph(f"{title} (page {n})", styles["Heading1"]))
        story += [Paragraph(text, styles["BodyText"]) for text in paragraphs]
        if n < pages:
            story.append(PageBreak())
    SimpleDocTemplate(str(path), pagesize=LETTER).build(story)
    return path


def memo_bytes(tmp: Path, title: str, paragraphs: list[str], pages: int = 1) -> bytes:
    """The bytes of :func:`write_memo` (written to a scratch file under ``tmp``)."""
    return write_memo(tmp / f"scratch-{abs(hash((title, tuple(paragraphs), pages)))}.pdf", title, paragraphs,
                      pages).read_bytes()
