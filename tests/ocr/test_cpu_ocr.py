"""CPU OCR on scanned copies of the generated sample: facts, table cells, headings, page furniture."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt
from rapidfuzz import fuzz

from folioflow.ocr.engines.cpu import CPU_ENGINES, DEFAULT_CPU_ENGINE, get_cpu_engine
from folioflow.ocr.errors import ConfigurationError, EngineUnavailableError
from folioflow.ocr.postprocess.textmetrics import cer
from folioflow.ocr.render import open_document
from folioflow.ocr.samples import SAMPLE_FACTS, SAMPLE_TABLE
from folioflow.ocr.schema import BlockType, PageStatus

FACT_PAGES = {"revenue": 1, "margin": 1, "sharpe": 2, "law": 2}


def convert(engine, path, numbers=(1, 2)):
    with open_document(path) as doc:
        return list(engine.convert_pages(doc, list(numbers)))


def fact_cer(fact: str, markdown: str) -> float:
    """CER of ``fact`` against the best-aligned stretch of ``markdown``."""
    align = fuzz.partial_ratio_alignment(fact, markdown)
    return cer(fact, markdown[align.dest_start:align.dest_end])


def pipe_table_rows(markdown: str) -> list[list[str]]:
    """Cell texts of the first pipe table in ``markdown`` (parsed by markdown-it, GFM tables)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    rows, row, inside = [], None, False
    for token in tokens:
        if token.type == "tr_open":
            row = []
        elif token.type in ("th_open", "td_open"):
            inside = True
        elif token.type == "inline" and inside:
            row.append(token.content.strip())
            inside = False
        elif token.type == "tr_close":
            rows.append(row)
    return rows


@pytest.fixture(scope="module")
def tesseract_pages(scanned_sample):
    engine = get_cpu_engine("tesseract", ["eng"])
    engine.warm_up()
    return convert(engine, scanned_sample(".tif", dpi=200))


def test_facts_recovered_with_low_cer(tesseract_pages):
    for key, fact in SAMPLE_FACTS.items():
        page = tesseract_pages[FACT_PAGES[key] - 1]
        assert fact_cer(fact, page.markdown) <= 0.03, (key, page.markdown)


def test_table_recognised_with_the_right_cells(tesseract_pages):
    page = tesseract_pages[0]
    tables = [b for b in page.blocks if b.type == BlockType.TABLE]
    assert len(tables) == 1
    assert tables[0].attributes["rows"] == 6 and tables[0].attributes["cols"] == 4
    assert pipe_table_rows(tables[0].text) == SAMPLE_TABLE
    assert tables[0].text in page.markdown


def test_headings_are_markdown_headings_in_reading_order(tesseract_pages):
    lines1 = tesseract_pages[0].markdown.splitlines()
    lines2 = tesseract_pages[1].markdown.splitlines()
    headings = [ln for ln in lines1 + lines2 if ln.startswith("#")]
    assert headings == [
        "# Northwind Capital Holdings Annual Report 2025",
        "# 1 Financial Highlights",
        "## Consolidated Statement of Operations (USD millions)",
        "# 2 Risk-Adjusted Return",
        "# 3 Governing Law",
    ]
    md = tesseract_pages[0].markdown
    assert md.index("1 Financial Highlights") < md.index("Total revenue grew") < md.index("| Line item")


def test_footer_labelled_and_left_out_of_markdown(tesseract_pages):
    for page in tesseract_pages:
        footers = [b for b in page.blocks if b.type == BlockType.PAGE_FOOTER]
        assert len(footers) == 1
        assert footers[0].text.endswith(f"Page {page.number}")
        assert "Annual Report 2025 - Page" not in page.markdown


def test_page_fields_units_and_boxes(tesseract_pages):
    for page in tesseract_pages:
        assert page.status == PageStatus.OK and page.engine == "tesseract"
        assert page.width == pytest.approx(612, abs=1) and page.height == pytest.approx(792, abs=1)
        assert page.rotation == 0 and abs(page.attributes["skew_degrees"]) < 0.2
        assert page.model.startswith("tesseract 5")
        for block in page.blocks:
            box = block.bbox
            assert 0 <= box.x0 < box.x1 <= page.width and 0 <= box.y0 < box.y1 <= page.height
    footer = next(b for b in tesseract_pages[0].blocks if b.type == BlockType.PAGE_FOOTER)
    assert footer.bbox.y0 > 0.9 * 792  # bottom of the page, in points, top-left origin


@pytest.mark.slow
def test_rapidocr_reads_the_sample_too(scanned_sample):
    engine = get_cpu_engine("rapidocr", ["eng"])
    engine.warm_up()
    pages = convert(engine, scanned_sample(".tif", dpi=200))
    for key, fact in SAMPLE_FACTS.items():
        assert fact_cer(fact, pages[FACT_PAGES[key] - 1].markdown) <= 0.05, key
    table = next(b for b in pages[0].blocks if b.type == BlockType.TABLE)
    assert pipe_table_rows(table.text) == SAMPLE_TABLE
    assert "# 1 Financial Highlights" in pages[0].markdown.splitlines()


def test_registry_contract():
    assert DEFAULT_CPU_ENGINE == "auto" and DEFAULT_CPU_ENGINE in CPU_ENGINES
    default = get_cpu_engine()
    assert default.name == "tesseract" and default.cache_key.startswith("auto:tesseract:")  # English default
    default.dpi = 200
    assert default.primary.dpi == 200
    assert get_cpu_engine("tesseract", ["eng", "fra"]).languages == ["eng", "fra"]
    assert get_cpu_engine("auto", ["chi_sim", "eng"]).primary.name == "rapidocr"
    assert get_cpu_engine("auto", ["kor", "eng"]).primary.name == "tesseract"
    assert get_cpu_engine("auto", ["eng"]).primary.name == "tesseract"
    with pytest.raises(ConfigurationError, match="unknown CPU OCR engine 'nope'"):
        get_cpu_engine("nope")


def test_missing_language_pack_is_a_clear_error():
    engine = get_cpu_engine("tesseract", ["eng", "xxx"])
    with pytest.raises(EngineUnavailableError, match=r"no traineddata for \['xxx'\]"):
        engine.warm_up()


def test_cache_key_names_engine_model_and_settings():
    tess = get_cpu_engine("tesseract", ["eng"])
    tess.warm_up()
    key = tess.cache_key
    assert key.startswith("tesseract:tesseract 5") and "eng" in key and "dpi300" in key
    assert get_cpu_engine("tesseract", ["deu"]).cache_key != get_cpu_engine("tesseract", ["eng"]).cache_key
