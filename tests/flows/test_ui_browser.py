"""The web UI in a real headless browser: Debian's ``/usr/bin/chromium`` driven by Playwright
(nothing downloads a browser), against the real app served by uvicorn on a loopback port over a
fresh data dir, with the real MiniLM model, embedded store and Prefect ingest runs. The server
requires an API key, so the tests also check that the UI sends it from its key field.

Documents: the generated two-page sample PDF and a truncated copy of it whose file name holds
HTML (it must fail with its error shown, and its name must appear as text, never as markup), then
a handwritten-like letter whose page the fidelity check marks partial (the list and the document
page show the partial page and its reason, as text).
The tests share one server and one browser tab and build on each other in file order (the first
sets the key, the upload feeds the list and page views): run the module whole, not one test by ``-k``.
Screenshots go to ``$FOLIOFLOW_ARTIFACTS/ui-screenshots`` (else a pytest temporary folder); the
folder is printed."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.is_file():
    pytest.skip(f"{CHROMIUM} is absent: install Debian's chromium (apt-get install chromium, "
                "infra/setup.sh --test); the UI tests never download a browser", allow_module_level=True)
pytest.importorskip("fastapi", reason="the `api` extra is not installed")
pytest.importorskip("playwright", reason="playwright (the `test` extra) is not installed")

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402

from folioflow.flows.service import ApiKey, ApiSettings, create_app  # noqa: E402
from folioflow.flows.settings import load_settings  # noqa: E402
from folioflow.ocr.samples import write_sample_pdf  # noqa: E402
from tests.ocr import fidelity_docs  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.integration]

API_KEY = "ui-test-key-0123456789abcdef"
BROKEN_NAME = "truncated <em>bold<em> & co.pdf"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
INGEST_TIMEOUT_MS = 300_000


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory) -> Path:
    base = os.environ.get("FOLIOFLOW_ARTIFACTS")
    folder = Path(base) / "ui-screenshots" if base else tmp_path_factory.mktemp("ui-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nUI screenshots: {folder}")
    return folder


@pytest.fixture(scope="module")
def documents(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("upload")
    sample = write_sample_pdf(folder / "report.pdf")
    broken = folder / BROKEN_NAME
    data = sample.read_bytes()
    broken.write_bytes(data[: len(data) // 3])  # a PDF cut short: no xref, no trailer
    letter = fidelity_docs.handwritten_png(folder / "letter.png")
    return {"sample": sample, "broken": broken, "letter": letter}


@pytest.fixture(scope="module")
def server(tmp_path_factory, prefect_harness):
    """The app served by uvicorn on a free loopback port (a socket bound to port 0 and handed to
    uvicorn: no race for the port); yields its base URL."""
    data = tmp_path_factory.mktemp("data")
    app = create_app(load_settings(data_dir=data, workers=1),
                     ApiSettings(keys=[ApiKey(key=API_KEY, name="ui-tests")], max_upload_bytes=5_000_000))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    uv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 180
    while not uv.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the API server did not start")
        time.sleep(0.2)
    yield f"http://127.0.0.1:{port}"
    uv.should_exit = True
    thread.join(30)
    sock.close()


@pytest.fixture(scope="module")
def page(server):
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000}, base_url=server)
        tab = context.new_page()
        errors: list[str] = []  # uncaught script errors (failed requests are the UI's to report)
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        tab.js_errors = errors  # type: ignore[attr-defined]
        yield tab
        browser.close()


def ready(page: Page, path: str) -> None:
    """Open ``path`` and wait until its script has loaded what it shows (``data-ready``)."""
    page.goto(path)
    page.wait_for_selector("body[data-ready='true']")


def api_get(server: str, path: str) -> dict:
    answer = httpx.get(server + path, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=60)
    answer.raise_for_status()
    return answer.json()


def test_without_the_key_the_ui_says_so_then_sends_it(page, server):
    ready(page, "/ui/documents")
    expect(page.locator("#message")).to_contain_text("401")
    expect(page.locator("#message")).to_contain_text("API key")
    page.fill("#api-key", API_KEY)
    page.click("#key-form button[type=submit]")
    page.wait_for_selector("body[data-ready='true']")
    expect(page.locator("#key-state")).to_have_text("key set for this tab")
    expect(page.locator("#message")).to_be_hidden()
    expect(page.locator("#summary")).to_contain_text("No documents yet")
    assert API_KEY not in page.content()  # kept in sessionStorage, never written into the page


def test_upload_and_progress_until_done(page, server, documents, screenshots):
    ready(page, "/ui/upload")
    page.set_input_files("#files", [str(documents["sample"]), str(documents["broken"])])
    page.click("#upload-form button[type=submit]")
    job = page.locator("article.job")
    expect(job).to_have_count(1)
    # the job card appears queued or running, with a progress bar, before it finishes
    assert job.get_attribute("data-state", timeout=10_000) in ("queued", "running", "succeeded")
    expect(job.locator("progress")).to_be_visible()
    page.screenshot(path=str(screenshots / "1-upload-progress.png"), full_page=True)
    expect(job).to_have_attribute("data-state", "succeeded", timeout=INGEST_TIMEOUT_MS)
    page.screenshot(path=str(screenshots / "2-upload-done.png"), full_page=True)
    assert job.locator("progress").get_attribute("value") == "100"
    expect(job.locator(".progress-text")).to_contain_text("2 of 2 page(s) converted")
    items = job.locator(".job-documents li")
    expect(items).to_have_count(2)
    good = job.locator(".job-documents li[data-status='indexed']")
    expect(good).to_contain_text("report.pdf")
    report = next(d for d in api_get(server, "/v1/documents")["document_list"] if d["path"].endswith("report.pdf"))
    expect(good.locator("a")).to_have_attribute("href", f"/ui/documents/{report['doc_id']}")
    bad = job.locator(".job-documents li[data-status='failed']")
    expect(bad).to_contain_text(BROKEN_NAME)  # the name as text: no <em> element was made of it
    expect(bad.locator("em")).to_have_count(0)
    expect(bad.locator(".error")).not_to_be_empty()
    assert not page.js_errors, page.js_errors  # type: ignore[attr-defined]


def test_document_list_shows_status_and_the_failed_documents_error(page, server, screenshots):
    listed = {Path(d["path"]).name: d for d in api_get(server, "/v1/documents")["document_list"]}
    # a file that cannot even be opened gets no registry record: the list shows it from its job's report
    assert BROKEN_NAME not in listed
    reports = {Path(d["source"]).name: d for job in api_get(server, "/v1/jobs") for d in job["documents"]}
    failed = reports[BROKEN_NAME]
    assert failed["status"] == "failed" and failed["error"].startswith("corrupt PDF")
    ready(page, "/ui/documents")
    expect(page.locator("#documents")).to_be_visible()
    expect(page.locator("#summary")).to_contain_text("1 more failed before reaching the index")
    rows = page.locator("#documents tbody tr")
    expect(rows).to_have_count(2)
    bad = page.locator("#documents tr[data-status='failed']")
    expect(bad).to_have_count(1)
    expect(bad.locator(".badge")).to_have_text("failed")
    expect(bad.locator("td.errors .error")).to_have_text(failed["error"])
    expect(bad).to_contain_text(BROKEN_NAME)
    expect(bad.locator("em")).to_have_count(0)
    good = page.locator(f"#documents tr[data-doc-id='{listed['report.pdf']['doc_id']}']")
    expect(good.locator(".badge")).to_have_text("indexed")
    expect(good.locator("td").nth(2)).to_have_text("2")
    page.screenshot(path=str(screenshots / "3-documents.png"), full_page=True)


def test_page_view_shows_image_markdown_and_chunks(page, server, screenshots):
    ready(page, "/ui/documents")
    page.click("#documents a:text('report.pdf')")
    page.wait_for_selector("body[data-ready='true']")
    view = page.locator("#page-view")
    expect(view).to_be_visible()
    image = page.locator("#page-figure img")
    expect(image).to_have_count(1)
    size = image.evaluate("img => [img.naturalWidth, img.naturalHeight]")
    assert size[0] > 500 and size[1] > size[0]  # a portrait Letter page at 110 dpi
    expect(page.locator("#page-html h2, #page-html h1").first).to_be_visible()
    expect(page.locator("#page-html")).to_contain_text("Financial Highlights")
    expect(page.locator("#page-html table")).to_have_count(1)  # the sample's table, rendered as HTML
    chunks = page.locator("#page-chunks li.chunk")
    assert chunks.count() >= 1
    expect(chunks.first.locator(".heading-path")).not_to_be_empty()
    boxes = page.locator("#page-figure .bbox")
    assert boxes.count() >= 1
    figure = page.locator("#page-figure").bounding_box()
    for i in range(boxes.count()):
        box = boxes.nth(i).bounding_box()
        assert box and figure and box["width"] > 0 and box["height"] > 0
        assert figure["x"] - 1 <= box["x"] and box["x"] + box["width"] <= figure["x"] + figure["width"] + 1
        assert figure["y"] - 1 <= box["y"] and box["y"] + box["height"] <= figure["y"] + figure["height"] + 1
    page.screenshot(path=str(screenshots / "4-page-1.png"), full_page=True)
    page.click("#next")
    page.wait_for_url("**/ui/documents/*?page=2")
    expect(page.locator("#page-html")).to_contain_text("Governing Law")
    expect(page.locator("#page-number")).to_have_value("2")
    expect(page.locator("#page-caption")).to_contain_text("Page 2")
    page.screenshot(path=str(screenshots / "5-page-2.png"), full_page=True)
    assert not page.js_errors, page.js_errors  # type: ignore[attr-defined]


def test_search_shows_heading_path_page_and_highlighted_thumbnail(page, server, screenshots):
    ready(page, "/ui/search")
    page.fill("#query", "governing law")
    page.click("#search-form button[type=submit]")
    page.wait_for_selector("#results li.hit")
    page.wait_for_function("() => !document.getElementById('results').dataset.loading")
    hit = page.locator("#results li.hit").first
    expect(hit.locator(".heading-path")).to_contain_text("Governing Law")
    expect(hit.locator(".pages")).to_have_text("page 2")
    expect(hit.locator(".cite a")).to_have_text("report.pdf")
    thumb = hit.locator(".thumb")
    expect(thumb.locator("img")).to_have_count(1)
    assert thumb.locator("img").evaluate("img => img.naturalWidth") > 100
    boxes = thumb.locator(".bbox")
    assert boxes.count() >= 1
    area = thumb.bounding_box()
    box = boxes.first.bounding_box()
    assert area and box and box["width"] > 5 and box["height"] > 2
    assert area["x"] - 1 <= box["x"] and box["x"] + box["width"] <= area["x"] + area["width"] + 1
    assert area["y"] - 1 <= box["y"] and box["y"] + box["height"] <= area["y"] + area["height"] + 1
    # the box sits where the chunk's first bounding box is on the page (page points -> thumbnail pixels)
    report = next(d for d in api_get(server, "/v1/documents")["document_list"] if d["path"].endswith("report.pdf"))
    page_two = api_get(server, f"/v1/documents/{report['doc_id']}/pages/2")
    chunk = next(c for c in page_two["chunks"] if "Governing Law" in " ".join(c["heading_path"]))
    x0, y0, x1, _ = chunk["bboxes"][0]
    assert abs((box["x"] - area["x"]) / area["width"] - x0 / page_two["width"]) < 0.03
    assert abs((box["y"] - area["y"]) / area["height"] - y0 / page_two["height"]) < 0.03
    assert abs(box["width"] / area["width"] - (x1 - x0) / page_two["width"]) < 0.03
    page.screenshot(path=str(screenshots / "6-search.png"), full_page=True)
    hit.locator(".thumb-link").click()
    page.wait_for_selector("body[data-ready='true']")
    expect(page.locator("#page-number")).to_have_value("2")
    assert not page.js_errors, page.js_errors  # type: ignore[attr-defined]


def test_partial_page_and_its_reason_are_shown(page, server, documents, screenshots):
    ready(page, "/ui/upload")
    page.set_input_files("#files", [str(documents["letter"])])
    page.click("#upload-form button[type=submit]")
    job = page.locator("article.job")
    expect(job).to_have_attribute("data-state", "succeeded", timeout=INGEST_TIMEOUT_MS)
    expect(job.locator(".job-documents li[data-status='indexed']")).to_contain_text("letter.png")
    letter = next(d for d in api_get(server, "/v1/documents")["document_list"] if d["path"].endswith("letter.png"))
    assert letter["status"] == "indexed" and letter["partial_pages"] == [1], letter
    [note] = letter["partial_notes"]
    assert note.startswith("page 1: fidelity: "), note
    # the job card says so too: the count, and the reason as a partial note, not an error
    item = job.locator(".job-documents li[data-status='indexed']")
    expect(item).to_contain_text("1 page(s) partial")
    expect(item.locator(".partial")).to_have_text(note)
    expect(item.locator(".error")).to_have_count(0)

    ready(page, "/ui/documents")
    row = page.locator(f"#documents tr[data-doc-id='{letter['doc_id']}']")
    expect(row.locator(".badge")).to_have_text("indexed")
    shown = row.locator("td.errors .partial")
    expect(shown).to_have_count(1)
    expect(shown).to_be_visible()
    expect(shown).to_have_text(note)  # the reason as text, with its numbers
    assert shown.evaluate("n => n.children.length") == 0  # inserted as text, never as markup
    expect(row.locator("td.errors")).to_contain_text("partial pages: 1")
    expect(row.locator("td.errors .error")).to_have_count(0)  # partial is not failed
    clean = page.locator("#documents tr[data-status='indexed']").filter(has_text="report.pdf")
    expect(clean.locator(".partial")).to_have_count(0)
    page.screenshot(path=str(screenshots / "7-documents-partial.png"), full_page=True)

    page.click("#documents a:text('letter.png')")
    page.wait_for_selector("body[data-ready='true']")
    meta = page.locator("#doc-meta")
    expect(meta.locator("dt:text-is('Partial pages') + dd")).to_have_text("1")
    expect(meta.locator("dt:text-is('Failed pages') + dd")).to_have_text("none")
    partial = page.locator("#doc-partial li.partial")
    expect(partial).to_have_count(1)
    expect(partial).to_be_visible()
    expect(partial).to_have_text(note)
    assert partial.evaluate("n => n.children.length") == 0
    expect(page.locator("#page-caption")).to_contain_text("partial")
    page.screenshot(path=str(screenshots / "8-document-partial.png"), full_page=True)
    assert not page.js_errors, page.js_errors  # type: ignore[attr-defined]


def test_a_document_page_for_an_unknown_key_says_no_such_document(page, server, screenshots):
    """With API keys the server sends the shell for any key (docs/ui.md); with the key set, the
    script shows "No such document" and the API's 404 reason."""
    ready(page, "/ui/documents/nosuchdoc")
    expect(page.locator("#doc-title")).to_have_text("No such document")
    expect(page.locator("#message")).to_contain_text("404: document 'nosuchdoc': no such document")
    assert page.title() == "No such document · folioflow"
    page.screenshot(path=str(screenshots / "9-no-such-document.png"), full_page=True)
    assert not page.js_errors, page.js_errors  # type: ignore[attr-defined]
