"""Rendering for the VLM in worker processes: sizes, encodings, orientation, documents from bytes."""

import asyncio
import base64
import io

import pytest
from PIL import Image

from folioflow.ocr.render import open_document
from folioflow.ocr.samples import write_sample_pdf, write_scanned_copy
from folioflow.ocr.vlm.profiles import get_profile
from folioflow.ocr.vlm.profiles.base import ImageSizing
from folioflow.ocr.vlm.render_pool import RenderPool, RenderRequest, render_handle


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    folder = tmp_path_factory.mktemp("render")
    pdf = write_sample_pdf(folder / "sample.pdf")
    return pdf, write_scanned_copy(pdf, folder / "turned.pdf", dpi=120, rotate=90)


def decode(data_url: str) -> Image.Image:
    head, payload = data_url.split(",", 1)
    assert head in ("data:image/png;base64", "data:image/jpeg;base64")
    return Image.open(io.BytesIO(base64.b64decode(payload)))


def test_worker_processes_render_at_the_profile_size(sample):
    pdf, _ = sample
    pool = RenderPool(2)
    try:

        async def run():
            sizing = get_profile("olmocr").sizing
            return await asyncio.gather(
                *(pool.render(RenderRequest(str(pdf), None, n, sizing)) for n in (1, 2, 1))
            )

        pages = asyncio.run(run())
    finally:
        pool.close()
    assert [p.number for p in pages] == [1, 2, 1]
    for page in pages:
        image = decode(page.data_url)
        assert image.size == (page.width_px, page.height_px) and max(image.size) == 1288
        assert page.has_text_layer and page.rotate == 0 and (page.page_width, page.page_height) == (612, 792)
    assert pages[0].data_url == pages[2].data_url  # same page, same bytes


def test_orientation_check_turns_scans_upright_only_without_text(sample):
    pdf, turned = sample
    sizing = ImageSizing(dpi=100, fmt="jpeg")
    with open_document(turned) as doc:
        page = render_handle(doc.page(1), RenderRequest(None, None, 1, sizing, orientation="no_text"))
    assert not page.has_text_layer and page.orientation_correction == 270 and page.rotate == 270
    image = decode(page.data_url)
    assert image.format == "JPEG" and image.height > image.width  # upright portrait again
    with open_document(pdf) as doc:
        born_digital = render_handle(doc.page(1), RenderRequest(None, None, 1, sizing, orientation="no_text"))
    assert born_digital.orientation_correction is None and born_digital.rotate == 0


def test_requested_turn_is_applied(sample):
    pdf, _ = sample
    with open_document(pdf) as doc:
        page = render_handle(doc.page(1), RenderRequest(None, None, 1, ImageSizing(dpi=36), rotate=90))
    assert page.rotate == 90 and page.width_px > page.height_px


def test_opened_documents_remember_their_source(sample):
    pdf, _ = sample
    data = pdf.read_bytes()
    with open_document(data, password=None) as doc:
        assert doc.source == data and doc.password is None
    with open_document(pdf) as doc:
        assert doc.source == pdf


def test_a_killed_render_worker_is_replaced(sample):
    import os
    import signal
    import time

    pdf, _ = sample
    pool = RenderPool(1)
    req = RenderRequest(str(pdf), None, 2, ImageSizing(dpi=50))
    try:
        first = asyncio.run(pool.render(req))
        broken = pool._executor
        for process in list(pool._executor._processes.values()):  # what the OOM killer would do
            os.kill(process.pid, signal.SIGKILL)
        time.sleep(1.0)
        again = asyncio.run(pool.render(req))
        replaced = pool._executor
    finally:
        pool.close()
    assert again.data_url == first.data_url and replaced is not broken and replaced is not None
