"""Small builders shared by the chunking tests."""

from __future__ import annotations

from folioflow.ocr.schema import Block, Document, Page, PageStatus, SourceRef


def make_doc(*pages: str, blocks: dict[int, list[Block]] | None = None, failed: tuple[int, ...] = ()) -> Document:
    """A document whose page i+1 has Markdown ``pages[i]`` (and optional layout blocks)."""
    out = []
    for i, md in enumerate(pages, 1):
        status = PageStatus.FAILED if i in failed else PageStatus.OK
        out.append(Page(number=i, width=612, height=792, markdown=md, blocks=(blocks or {}).get(i, []),
                        engine="test", status=status))
    return Document(doc_id="00000000-0000-5000-8000-000000000001", content_hash="0" * 64,
                    source=SourceRef(uri="file:///test.pdf", path="test.pdf"), mime_type="application/pdf",
                    page_count=len(out), pages=out)


SENTENCES = [
    "Total revenue grew 12% to $4,210 million in fiscal 2025, driven by advisory fees.",
    "Operating margin improved to 18.4% as compensation costs fell.",
    "The Sharpe ratio of the flagship fund was 1.35 over the trailing three years.",
    "Management expects advisory demand to remain resilient despite higher interest rates.",
    "The board approved a quarterly dividend of $0.42 per share, payable on March 15.",
    "Net interest income declined by 3% because deposit costs rose faster than loan yields.",
    "Credit losses remained below the five-year average across all consumer portfolios.",
    "This Agreement shall be governed by the laws of the State of Delaware.",
]


def prose(n: int, offset: int = 0) -> str:
    """``n`` realistic sentences (cycling through :data:`SENTENCES`)."""
    return " ".join(SENTENCES[(offset + i) % len(SENTENCES)] for i in range(n))


def pipe_table(rows: int, cols: int = 4, page_tag: str = "") -> str:
    head = "| Line item | " + " | ".join(f"FY{2025 - c}" for c in range(cols - 1)) + " |"
    delim = "|" + "---|" * cols
    body = [f"| Segment {page_tag}{r} revenue | " + " | ".join(f"{(r + 1) * 101 + c:,}" for c in range(cols - 1)) + " |"
            for r in range(rows)]
    return "\n".join([head, delim, *body])
