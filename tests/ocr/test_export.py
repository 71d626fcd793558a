"""Markdown / HTML / JSON outputs, the published JSON Schema, and figure crops."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from PIL import Image

from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.export import (
    SCHEMA_PATH,
    document_html,
    document_json,
    document_markdown,
    extract_figures,
    json_schema,
    page_html,
)
from folioflow.ocr.ids import canonical_uri
from folioflow.ocr.samples import write_sample_pdf
from folioflow.ocr.schema import BlockType, Document, Page, PageStatus, SourceRef
from tests.ocr import docs


def convert(path: Path, **options) -> Document:
    source = SourceRef(uri=canonical_uri(path), path=path.name)
    return DocumentConverter(ConvertOptions(engine="text", **options)).convert(DocumentInput(data=path, source=source))


@pytest.fixture(scope="module")
def sample_doc(tmp_path_factory) -> Document:
    return convert(write_sample_pdf(tmp_path_factory.mktemp("export") / "sample.pdf"))


def test_markdown_has_page_markers_in_order(sample_doc):
    md = document_markdown(sample_doc)
    assert md.index("<!-- page 1 -->") < md.index("# Northwind Capital") < md.index("<!-- page 2 -->") \
        < md.index("# 2 Risk-Adjusted Return")
    assert "| Advisory fees | 2,150 | 1,830 | 17% |" in md
    assert "$$S = " in md
    assert "Annual Report 2025 - Page 1" not in md
    with_margins = document_markdown(sample_doc, include_headers_footers=True)
    assert "Northwind Capital Holdings - Annual Report 2025 - Page 2" in with_margins


def test_failed_pages_leave_a_marked_gap():
    page_ok = Page(number=1, width=10, height=10, engine="text", markdown="Hello")
    page_bad = Page(number=2, width=10, height=10, engine="text", status=PageStatus.FAILED,
                    errors=["page 2: text layer unusable: garbage --> text"])
    document = Document(doc_id="d", content_hash="0" * 64, source=SourceRef(uri="file:///x.pdf", path="x.pdf"),
                        mime_type="application/pdf", page_count=2, pages=[page_ok, page_bad])
    md = document_markdown(document)
    assert "<!-- page 2 failed: page 2: text layer unusable: garbage - -> text -->" in md
    assert "Page failed" in document_html(document)


def test_html_is_standalone_with_tables_and_no_active_content(sample_doc):
    out = document_html(sample_doc)
    assert out.startswith("<!DOCTYPE html>") and "<style>" in out
    assert "<table>" in out and "<td>Advisory fees</td>" in out
    assert 'id="page-2"' in out and '<div class="math block">' in out
    hostile = sample_doc.model_copy(deep=True)
    hostile.pages[0].markdown += '\n\n<script>alert(1)</script> <img src=x onerror="alert(2)">'
    hostile.pages[0].blocks = []
    rendered = document_html(hostile)
    assert "<script>" not in rendered and "onerror" not in rendered


def test_html_keeps_dollar_amounts_as_text_and_renders_math(sample_doc):
    first = page_html(sample_doc.pages[0])  # "...to $4,210 million ... reached $38 billion..."
    assert "$4,210 million" in first and "$38 billion" in first and "math inline" not in first
    page = Page(number=1, width=10, height=10, engine="vlm", markdown="Sharpe $S = R/\\sigma$ over $5 and $6.")
    out = page_html(page)
    assert '<span class="math inline">S = R/\\sigma</span>' in out and "over $5 and $6." in out


def test_json_validates_against_the_published_schema(sample_doc):
    schema = json.loads(SCHEMA_PATH.read_text())
    data = json.loads(document_json(sample_doc))
    jsonschema.Draft202012Validator(schema).validate(data)
    assert data["pages"][0]["blocks"][0]["bbox"]["y0"] >= 0
    assert Document.model_validate(data) == sample_doc
    broken = dict(data, page_count=-1)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(broken)


def test_published_schema_is_up_to_date():
    """Regenerate with ``python -m folioflow.ocr.export`` when this fails after a model change."""
    assert json.loads(SCHEMA_PATH.read_text()) == json.loads(json.dumps(json_schema()))


def test_figures_are_cropped_and_linked(tmp_path):
    path = docs.figure_pdf(tmp_path / "figure.pdf")
    document = convert(path)
    figures = [b for b in document.pages[0].blocks if b.type == BlockType.FIGURE]
    assert len(figures) == 1 and abs(figures[0].bbox.width - 400) < 1 and abs(figures[0].bbox.y0 - 162) < 1
    links = extract_figures(document, path, tmp_path / "figure_images", prefix="", dpi=72)
    assert list(links.values()) == ["figure_images/page-1-figure-1.png"]
    crop = Image.open(tmp_path / "figure_images/page-1-figure-1.png")
    assert abs(crop.width - 400) <= 2 and abs(crop.height - 250) <= 2
    md = document_markdown(document, image_links=links)
    assert "](figure_images/page-1-figure-1.png)" in md
    assert md.index("The chart below") < md.index("figure_images/")
