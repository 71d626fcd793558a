"""Boxes from a turned image back to page points."""

import pytest

from folioflow.ocr.schema import BBox
from folioflow.ocr.vlm.geometry import image_box_to_page, unrotate_point


@pytest.mark.parametrize("rotate", [0, 90, 180, 270])
def test_unrotate_inverts_a_clockwise_turn(rotate):
    from PIL import Image

    # A 4x2 image with one marked pixel; turn it clockwise and find the pixel again.
    image = Image.new("L", (4, 2), 0)
    image.putpixel((3, 0), 255)  # top-right pixel, centre at (3.5/4, 0.5/2)
    turned = image.rotate(-rotate, expand=True)
    x, y = next((x, y) for y in range(turned.height) for x in range(turned.width) if turned.getpixel((x, y)))
    u, v = (x + 0.5) / turned.width, (y + 0.5) / turned.height
    assert unrotate_point(u, v, rotate) == pytest.approx((3.5 / 4, 0.5 / 2))


def test_box_to_page_points_with_and_without_turn():
    page_w, page_h = 612.0, 792.0
    box = BBox(x0=0.1, y0=0.2, x1=0.5, y1=0.3)
    assert image_box_to_page(box, 0, page_w, page_h) == BBox(x0=61.2, y0=158.4, x1=306.0, y1=237.6)
    # The same region seen in an image turned 90 degrees clockwise: (x, y) -> (1 - y, x).
    turned = BBox(x0=1 - 0.3, y0=0.1, x1=1 - 0.2, y1=0.5)
    back = image_box_to_page(turned, 90, page_w, page_h)
    assert (back.x0, back.y0, back.x1, back.y1) == pytest.approx((61.2, 158.4, 306.0, 237.6))


def test_bad_rotation_is_refused():
    with pytest.raises(ValueError):
        unrotate_point(0.5, 0.5, 45)
