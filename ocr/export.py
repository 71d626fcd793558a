"""Conversion outputs: Markdown, standalone HTML and JSON (with its JSON Schema), plus figures.

* **Markdown**: pages in order, each preceded by ``<!-- page N -->``; a failed page leaves
  ``<!-- page N failed: reason -->``, a partial page ``<!-- page N partial: reason -->``. Tables stay as the engine produced them (pipe tables, or
  HTML ``<table>`` with spans from VLMs), display formulas as ``$$...$$``. Page headers and
  footers are left out unless asked for.
* **HTML**: the same Markdown rendered with markdown-it-py (CommonMark + GFM tables +
  ``dollarmath``), sanitised with nh3 (ammonia's allow-list, so a ``<script>`` in a document's
  text stays inert), one ``<section>`` per page, in a self-contained page with its own CSS. URLs a
  browser would fetch on opening (``<img src>`` ...) are kept only when relative, and a
  Content-Security-Policy forbids any other load: a document naming a tracking pixel cannot make
  its reader's browser call it.
* **JSON**: :class:`~folioflow.ocr.schema.Document` as pydantic dumps it; :func:`json_schema` is generated
  from the model and published as ``ocr/document.schema.json`` (regenerate with
  ``python -m folioflow.ocr.export``; a test fails when it is stale).
* **Figures**: :func:`extract_figures` crops figure blocks from the rendered page and writes PNGs
  beside the Markdown, referenced by relative links.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import nh3
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from folioflow.ocr.render import RenderLimits, open_document
from folioflow.ocr.schema import Block, BlockType, Document, Page, PageStatus

__all__ = ["SCHEMA_PATH", "SCHEMA_ID", "furniture_comment", "page_markdown", "document_markdown", "page_html", "document_html", "document_json",
           "json_schema", "write_schema", "extract_figures", "partial_reason"]

#: Where the generated JSON Schema of :class:`~folioflow.ocr.schema.Document` is published (package data).
SCHEMA_PATH = Path(__file__).with_name("document.schema.json")
SCHEMA_ID = "https://folioflow.dev/schemas/document.schema.json"

#: Image links by (page number, block index in ``Page.blocks``) -> relative path.
ImageLinks = dict[tuple[int, int], str]

_MARGINS = {BlockType.PAGE_HEADER, BlockType.PAGE_FOOTER}


def furniture_comment(block: Block) -> str:
    """A page header/footer as ``folioflow show`` marks it: ``<!-- furniture (page header): TEXT -->``."""
    kind = "page header" if block.type == BlockType.PAGE_HEADER else "page footer"
    return f"<!-- furniture ({kind}): {' '.join(block.text.split()).replace('--', '- -')} -->"


def page_markdown(page: Page, include_headers_footers: bool = False, image_links: ImageLinks | None = None,
                  mark_furniture: bool = False) -> str:
    """Markdown of one page. Uses ``Page.markdown`` unless headers/footers or figure links must be
    added, in which case the page is rebuilt from its blocks (whose ``text`` is their Markdown).
    ``mark_furniture``: page headers/footers appear as :func:`furniture_comment` lines around the
    page's own Markdown (what ``folioflow show`` prints: they are indexed as metadata, not text)."""
    if mark_furniture and not include_headers_footers:
        heads = [furniture_comment(b) for b in page.blocks if b.type == BlockType.PAGE_HEADER and b.text.strip()]
        feet = [furniture_comment(b) for b in page.blocks if b.type == BlockType.PAGE_FOOTER and b.text.strip()]
        body = page_markdown(page, False, image_links)
        return "\n\n".join(part for part in ["\n".join(heads), body, "\n".join(feet)] if part)
    links = {k[1]: v for k, v in (image_links or {}).items() if k[0] == page.number}
    if not page.blocks or (not links and not (include_headers_footers and any(b.type in _MARGINS for b in page.blocks))):
        return page.markdown.strip()
    parts: list[str] = []
    for index, block in enumerate(page.blocks):
        if block.type in _MARGINS and not include_headers_footers:
            continue
        if index in links:
            caption = block.text.strip() or f"Figure {len(parts) + 1} on page {page.number}"
            parts.append(f"![{_alt(caption)}]({links[index]})")
        elif block.text.strip():
            parts.append(block.text.strip())
    return "\n\n".join(parts)


def _alt(text: str) -> str:
    return text.replace("[", "(").replace("]", ")").replace("\n", " ")[:120]


def document_markdown(document: Document, include_headers_footers: bool = False,
                      image_links: ImageLinks | None = None, mark_furniture: bool = False) -> str:
    """The whole document as Markdown with ``<!-- page N -->`` markers (see module docstring);
    a ``partial`` page adds ``<!-- page N partial: reason -->``. ``mark_furniture``: see
    :func:`page_markdown`."""
    parts = []
    for page in document.pages:
        parts.append(f"<!-- page {page.number} -->")
        if page.status == PageStatus.FAILED:
            reason = "; ".join(page.errors) or "no content"
            parts.append(f"<!-- page {page.number} failed: {reason.replace('--', '- -')} -->")
            continue
        if page.status == PageStatus.PARTIAL:
            parts.append(f"<!-- page {page.number} partial: {partial_reason(page).replace('--', '- -')} -->")
        body = page_markdown(page, include_headers_footers, image_links, mark_furniture)
        if body:
            parts.append(body)
    return "\n\n".join(parts) + "\n"


def partial_reason(page: Page) -> str:
    """Why a ``partial`` page is partial: its fidelity check's reason (with the measured numbers),
    else its errors, else ``"partial"``."""
    return (page.fidelity.reason if page.fidelity else None) or "; ".join(page.errors) or "partial"


def _renderer() -> MarkdownIt:
    # Inline math by pandoc's tex_math_dollars rule: no space inside the dollars and no digit right
    # after the closing one, so currency ("$4,210 million ... $38 billion") stays text.
    return (MarkdownIt("commonmark", {"html": True}).enable("table")
            .use(dollarmath_plugin, allow_space=False, allow_digits=False))


_ATTRIBUTES = {**nh3.ALLOWED_ATTRIBUTES, "div": {"class"}, "span": {"class"}}
#: Attributes a browser fetches by itself when the page opens (links are only followed on a click).
_FETCHED = {"src", "srcset", "poster", "background", "lowsrc", "dynsrc", "longdesc", "cite"}


def _local_only(element: str, attribute: str, value: str) -> str | None:
    """nh3 attribute filter: a URL the browser would load by itself (``src`` ...) is kept only when
    it is relative (figure crops beside the file); ``https://``, ``//host`` and ``data:`` are dropped,
    so opening an exported document never contacts a server named inside it."""
    if attribute not in _FETCHED:
        return value
    text = value.strip().lower()
    if text.startswith("//") or ":" in text.split("/", 1)[0]:
        return None
    return value

#: Defence in depth: the exported page may load nothing but its own inline CSS and local images.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' file:"

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
line-height:1.5;color:#1d1d1f}
section.page{border-top:1px solid #ccc;padding-top:.5rem;margin-top:2rem}
.page-label{color:#888;font-size:.8rem;text-transform:uppercase;letter-spacing:.05em}
.page-failed{color:#a00}
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}
th,td{border:1px solid #bbb;padding:.25rem .5rem;vertical-align:top}
th{background:#f3f3f3}
td:not(:first-child){text-align:right}
.math.block{font-family:"Latin Modern Math","Cambria Math",serif;background:#f8f8f8;padding:.5rem;
margin:1rem 0;overflow-x:auto;white-space:pre-wrap}
img{max-width:100%}
"""


def page_html(page: Page, include_headers_footers: bool = False, image_links: ImageLinks | None = None,
              renderer: MarkdownIt | None = None) -> str:
    """One page's content as sanitized HTML (an HTML fragment, no ``<section>``): its Markdown
    rendered and cleaned (only local links and images kept), or a ``page-failed`` paragraph with its
    errors for a failed page."""
    if page.status == PageStatus.FAILED:
        return f'<p class="page-failed">Page failed: {html.escape("; ".join(page.errors) or "no content")}</p>'
    md = renderer or _renderer()
    return nh3.clean(md.render(page_markdown(page, include_headers_footers, image_links)),
                     attributes=_ATTRIBUTES, attribute_filter=_local_only)


def document_html(document: Document, include_headers_footers: bool = False,
                  image_links: ImageLinks | None = None, title: str | None = None) -> str:
    """A standalone, readable HTML file of the document (one ``<section>`` per page)."""
    md = _renderer()
    title = title or document.metadata.get("Title") or document.source.path
    sections = []
    for page in document.pages:
        body = page_html(page, include_headers_footers, image_links, md)
        sections.append(f'<section class="page" id="page-{page.number}">\n'
                        f'<div class="page-label">Page {page.number} · {html.escape(page.engine)}</div>\n{body}\n</section>')
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{_CSP}\">\n"
            f"<title>{html.escape(str(title))}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            f"<h1 class=\"document-title\">{html.escape(str(title))}</h1>\n" + "\n".join(sections) + "\n</body>\n</html>\n")


def document_json(document: Document, indent: int | None = 2) -> str:
    """The typed document as JSON (validates against :func:`json_schema`)."""
    return document.model_dump_json(indent=indent)


def json_schema() -> dict:
    """JSON Schema (draft 2020-12) of :class:`~folioflow.ocr.schema.Document`, generated from the model."""
    schema = Document.model_json_schema(mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def write_schema(path: Path = SCHEMA_PATH) -> Path:
    """Write :func:`json_schema` to ``path`` (sorted keys, 2-space indent) and return it."""
    path.write_text(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _figure_blocks(page: Page) -> list[tuple[int, Block]]:
    return [(i, b) for i, b in enumerate(page.blocks)
            if b.type == BlockType.FIGURE and b.bbox is not None and b.bbox.width > 4 and b.bbox.height > 4]


def extract_figures(document: Document, data: bytes | Path, out_dir: Path, prefix: str, password: str | None = None,
                    dpi: float = 150.0, max_width: int | None = None, limits: RenderLimits | None = None) -> ImageLinks:
    """Crop every figure block (with a bbox) from its rendered page into ``out_dir`` as
    ``{prefix}page-N-figure-K.png`` and return links relative to ``out_dir.parent``.

    ``dpi``: render resolution; ``max_width``: cap on a crop's width in pixels. Pages are
    rendered one at a time. Raises :class:`~folioflow.ocr.errors.SourceError` if the source cannot be opened.
    """
    links: ImageLinks = {}
    wanted = [(p, _figure_blocks(p)) for p in document.pages if p.status != PageStatus.FAILED]
    wanted = [(p, f) for p, f in wanted if f]
    if not wanted:
        return links
    out_dir.mkdir(parents=True, exist_ok=True)
    with open_document(data, password=password, limits=limits) as opened:
        for page, figures in wanted:
            image = opened.page(page.number).render(dpi=dpi)
            sx, sy = image.width / max(page.width, 1e-6), image.height / max(page.height, 1e-6)
            for k, (index, block) in enumerate(figures, start=1):
                box = block.bbox
                assert box is not None  # _figure_blocks keeps blocks with a bbox
                crop = image.crop((max(0, int(box.x0 * sx)), max(0, int(box.y0 * sy)),
                                   min(image.width, int(box.x1 * sx + 0.999)), min(image.height, int(box.y1 * sy + 0.999))))
                if crop.width < 2 or crop.height < 2:
                    continue
                if max_width and crop.width > max_width:
                    crop = crop.resize((max_width, max(1, round(crop.height * max_width / crop.width))))
                name = f"{prefix}page-{page.number}-figure-{k}.png"
                crop.save(out_dir / name)
                links[(page.number, index)] = f"{out_dir.name}/{name}"
    return links


if __name__ == "__main__":  # regenerate the published schema
    print(write_schema())
