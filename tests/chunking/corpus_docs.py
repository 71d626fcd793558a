"""Real documents from ``../shared/corpus`` as :class:`folioflow.ocr.schema.Document` objects, for the chunking
tests and ``tests/benchmarks/bench_chunking.py``.

* docling ground truth (``D_layout_math_tables/docling_pdf/groundtruth/*.json``): pages, Markdown
  and layout blocks with bboxes (converted from docling's bottom-left origin to the schema's
  top-left), page headers/footers labelled, tables rendered as pipe tables from the cell grid.
* Ground-truth Markdown files (docling ``.md``, OmniDocBench ``mds/*.md``): one page each.
* ICDAR 2013 table competition (``tabula_icdar2013``): every table region of ``*-str.xml`` rendered
  to Markdown on its page (HTML with ``rowspan``/``colspan`` when the table has spans, else a pipe
  table), first row as header; a table continued on the next page becomes a second region there.
* FinanceBench filings through folioflow's own embedded text-layer engine
  (:class:`folioflow.ocr.converter.DocumentConverter`, ``engine="text"``: Markdown with headings, pipe tables,
  page headers/footers and bboxes), or through the simple extraction below where that engine is
  not available.
* PDFs through a simple text extraction (pypdfium2 text per page; lines grouped into paragraphs;
  10-K "PART I"/"Item 7." lines as headings), for olmOCR-bench pages (with the bench's ``math``
  facts added to their page as display formulas).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from folioflow.ocr.schema import BBox, Block, BlockType, Document, Page, SourceRef

DOCLING = "D_layout_math_tables/docling_pdf/groundtruth"
OMNIDOC = "C_scanned_multilang/omnidocbench_demo/mds"
ICDAR = "D_layout_math_tables/tabula_icdar2013/competition-dataset-eu"
OLMOCR = "D_layout_math_tables/olmocr_bench"
FINANCEBENCH = "A_finance/financebench/pdfs"


def make_document(name: str, pages: list[Page]) -> Document:
    """A Document around ready pages (doc id and hash derived from the name)."""
    from folioflow.ocr.ids import doc_id_for, sha256_text

    uri = f"file:///corpus/{name}"
    return Document(doc_id=doc_id_for(uri), content_hash=sha256_text(name), source=SourceRef(uri=uri, path=name),
                    mime_type="application/pdf", page_count=len(pages), pages=pages)


def markdown_document(path: Path) -> Document:
    """A Markdown file as a one-page document (``<!-- page N -->`` markers split it into pages)."""
    text = path.read_text(encoding="utf-8")
    parts = re.split(r"^<!-- page \d+ -->\s*$", text, flags=re.MULTILINE)
    parts = [p.strip("\n") for p in parts if p.strip()] or [""]
    pages = [Page(number=i, width=612, height=792, markdown=p, engine="groundtruth") for i, p in enumerate(parts, 1)]
    return make_document(path.name, pages)


# -- docling JSON --------------------------------------------------------------------------------------
_LABELS = {"section_header": BlockType.HEADING, "title": BlockType.TITLE, "text": BlockType.PARAGRAPH,
           "list_item": BlockType.LIST_ITEM, "caption": BlockType.CAPTION, "footnote": BlockType.FOOTNOTE,
           "code": BlockType.CODE, "formula": BlockType.FORMULA, "page_header": BlockType.PAGE_HEADER,
           "page_footer": BlockType.PAGE_FOOTER, "table": BlockType.TABLE}


def _bbox(prov: dict, height: float) -> BBox:
    b = prov["bbox"]
    if b.get("coord_origin", "BOTTOMLEFT") == "BOTTOMLEFT":
        return BBox(x0=b["l"], y0=height - b["t"], x1=b["r"], y1=height - b["b"])
    return BBox(x0=b["l"], y0=b["t"], x1=b["r"], y1=b["b"])


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def pipe_table(grid: list[list[str]]) -> str:
    """A pipe table from a grid of cell texts (first row as header)."""
    if not grid:
        return ""
    ncols = max(len(r) for r in grid)
    rows = [[_cell(c) for c in r] + [""] * (ncols - len(r)) for r in grid]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * ncols]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def docling_document(path: Path) -> Document:
    """A docling ground-truth JSON as a Document with per-page Markdown and layout blocks."""
    data = json.loads(path.read_text(encoding="utf-8"))
    sizes = {int(k): v["size"] for k, v in data["pages"].items()}
    items: dict[str, dict] = {}
    for kind in ("texts", "tables", "pictures", "groups"):
        for i, item in enumerate(data.get(kind, [])):
            items[f"#/{kind}/{i}"] = item
    order: list[dict] = []

    def walk(ref: str) -> None:
        item = items.get(ref)
        if item is None:
            return
        if "label" in item and item.get("prov"):
            order.append(item)
        for child in item.get("children", []):
            walk(child["$ref"])

    for child in data["body"]["children"]:
        walk(child["$ref"])
    seen = {id(i) for i in order}
    furniture = [t for t in data["texts"] if id(t) not in seen and t.get("prov")]
    per_page: dict[int, list[Block]] = {n: [] for n in sizes}
    for item in order + furniture:
        label = item["label"]
        prov = item["prov"][0]
        page = prov["page_no"]
        height = sizes[page]["height"]
        text = (item.get("text") or "").strip()
        if label == "table":
            grid = [[c.get("text", "") for c in row] for row in item["data"].get("grid", [])]
            md = pipe_table(grid)
        elif label == "picture" or not text and label != "table":
            continue
        elif label == "section_header":
            md = "#" * (int(item.get("level", 1)) + 1) + " " + text
        elif label == "title":
            md = "# " + text
        elif label == "list_item":
            md = ("1. " if item.get("enumerated") else "- ") + text
        elif label == "code":
            md = "```\n" + text + "\n```"
        elif label == "formula":
            md = "$$\n" + text + "\n$$"
        else:
            md = text
        if not md:
            continue
        btype = _LABELS.get(label, BlockType.OTHER)
        block = Block(type=btype, text=md, bbox=_bbox(prov, height), level=item.get("level"))
        if btype == BlockType.PAGE_HEADER:
            per_page[page].insert(0, block)
        else:
            per_page[page].append(block)
    pages = []
    for n in sorted(sizes):
        blocks = per_page[n]
        pages.append(Page(number=n, width=sizes[n]["width"], height=sizes[n]["height"], blocks=blocks,
                          markdown="\n\n".join(b.text for b in blocks), engine="groundtruth"))
    return make_document(path.name, pages)


# -- ICDAR 2013 ----------------------------------------------------------------------------------------
def icdar_table_markdown(region: ET.Element) -> str:
    """Markdown of one ICDAR ``<region>``: pipe table without spans, HTML with spans."""
    cells = []
    for c in region.findall("cell"):
        r0, c0 = int(c.get("start-row")), int(c.get("start-col"))
        r1, c1 = int(c.get("end-row", r0)), int(c.get("end-col", c0))
        text = " ".join((c.findtext("content") or "").split())
        cells.append((r0, c0, r1 - r0 + 1, c1 - c0 + 1, text))
    if not cells:
        return ""
    nrows = max(r + rs for r, _, rs, _, _ in cells)
    ncols = max(c + cs for _, c, _, cs, _ in cells)
    if all(rs == 1 and cs == 1 for _, _, rs, cs, _ in cells):
        grid = [[""] * ncols for _ in range(nrows)]
        for r, c, _, _, t in cells:
            grid[r][c] = t
        return pipe_table(grid)
    by_row: dict[int, list] = {}
    for cell in sorted(cells, key=lambda x: (x[0], x[1])):
        by_row.setdefault(cell[0], []).append(cell)
    out = ["<table>"]
    for r in range(nrows):
        tag = "th" if r == 0 else "td"
        tds = []
        for _, _, rs, cs, t in by_row.get(r, []):
            attrs = (f' rowspan="{rs}"' if rs > 1 else "") + (f' colspan="{cs}"' if cs > 1 else "")
            tds.append(f"<{tag}{attrs}>{t}</{tag}>")
        out.append("<tr>" + "".join(tds) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def icdar_document(path: Path) -> Document:
    """Tables of one ICDAR ``*-str.xml`` on their pages: "## Table N" before each table's first
    region, continuation regions at the top of the next page."""
    root = ET.parse(path).getroot()
    per_page: dict[int, list[str]] = {}
    for table in root.findall("table"):
        for k, region in enumerate(table.findall("region")):
            md = icdar_table_markdown(region)
            if not md:
                continue
            page = int(region.get("page", "1"))
            parts = per_page.setdefault(page, [])
            if k == 0:
                parts.append(f"## Table {table.get('id')}")
            parts.append(md)
    last = max(per_page) if per_page else 1
    pages = [Page(number=n, width=595, height=842, markdown="\n\n".join(per_page.get(n, [])), engine="groundtruth")
             for n in range(1, last + 1)]
    return make_document(path.name, pages)


# -- PDFs through a simple text extraction --------------------------------------------------------------
_HEADING = re.compile(r"^(PART\s+[IVX]+\b.*|Item\s+\d+[A-Z]?\..*)$", re.IGNORECASE)


def text_to_markdown(text: str) -> str:
    """Text-layer lines -> Markdown paragraphs: a line ending a sentence, or a short line, ends a
    paragraph; 10-K "PART I" / "Item 7." lines become headings."""
    lines = [ln.strip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    lines = [ln for ln in lines if ln]
    if not lines:
        return ""
    width = max(len(ln) for ln in lines)
    blocks, current = [], []
    for ln in lines:
        if _HEADING.match(ln) and len(ln) < 120:
            if current:
                blocks.append(" ".join(current))
                current = []
            blocks.append("## " + ln)
            continue
        current.append(ln.replace("|", "\\|"))
        if ln[-1] in ".:;!?" or len(ln) < 0.6 * width:
            blocks.append(" ".join(current))
            current = []
    if current:
        blocks.append(" ".join(current))
    return "\n\n".join(_escape_block(b) for b in blocks)


def _escape_block(block: str) -> str:
    """Keep extracted text literal: a line that would start a Markdown list/heading/quote/code is
    escaped."""
    if block.startswith("## "):
        return block
    return re.sub(r"^(\s*)([-+*#>]|\d+[.)]|\s{4})", lambda m: m.group(1) + "\\" + m.group(2).lstrip(), block)


def pdf_text_document(path: Path, max_pages: int | None = None, extra: dict[int, list[str]] | None = None) -> Document:
    """A PDF through pypdfium2's text layer (see :func:`text_to_markdown`). ``extra``: Markdown
    blocks appended to given pages (1-based)."""
    import pypdfium2 as pdfium

    from folioflow.ocr.render import PDFIUM_LOCK

    pages = []
    with PDFIUM_LOCK:
        pdf = pdfium.PdfDocument(str(path))
        try:
            n = len(pdf) if max_pages is None else min(len(pdf), max_pages)
            for i in range(n):
                page = pdf[i]
                width, height = page.get_size()
                textpage = page.get_textpage()
                text = textpage.get_text_range()
                textpage.close()
                page.close()
                md = text_to_markdown(text)
                if extra and extra.get(i + 1):
                    md = "\n\n".join([md, *extra[i + 1]]).strip()
                pages.append(Page(number=i + 1, width=width, height=height, markdown=md, engine="text"))
        finally:
            pdf.close()
    return make_document(path.name, pages)


def filing_document(path: Path, max_pages: int | None = None) -> Document:
    """A filing through the text-layer engine (``folioflow.ocr.converter``), else :func:`pdf_text_document`."""
    try:
        from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    except ImportError:
        return pdf_text_document(path, max_pages=max_pages)
    options = ConvertOptions(engine="text", page_range=f"1-{max_pages}" if max_pages else None)
    converter = DocumentConverter(options)
    source = SourceRef(uri=path.resolve().as_uri(), path=path.name)
    return converter.convert(DocumentInput(data=path, source=source))


def olmocr_documents(corpus: Path) -> list[Document]:
    """olmOCR-bench PDFs through the text layer, with each ``math`` fact of the bench added to its
    page as a display formula."""
    base = corpus / OLMOCR
    facts: dict[str, list[str]] = {}
    for line in (base / "dataset.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if row.get("type") == "math":
                facts.setdefault(row["pdf"], []).append(f"$$\n{row['math']}\n$$")
    docs = []
    for pdf in sorted((base / "pdfs").rglob("*.pdf")):
        rel = str(pdf.relative_to(base / "pdfs"))
        docs.append(pdf_text_document(pdf, extra={1: facts.get(rel, [])}))
    return docs


def corpus_sets(corpus: Path, filings: int = 2, filing_pages: int | None = 60) -> dict[str, list[Document]]:
    """Every document family used by the invariant tests and the benchmark, by family name."""
    fb = sorted((corpus / FINANCEBENCH).glob("*.pdf"))[:filings]
    return {
        "docling_md": [markdown_document(p) for p in sorted((corpus / DOCLING).glob("*.md"))],
        "docling_json": [docling_document(p) for p in sorted((corpus / DOCLING).glob("*.json"))
                         if not p.name.endswith(".pages.meta.json")],
        "omnidocbench": [markdown_document(p) for p in sorted((corpus / OMNIDOC).glob("*.md"))],
        "icdar2013": [icdar_document(p) for p in sorted((corpus / ICDAR).glob("*-str.xml"))],
        "olmocr_bench": olmocr_documents(corpus),
        "financebench": [filing_document(p, max_pages=filing_pages) for p in fb],
    }
