"""OCR evaluation on olmOCR-bench-format tests (``folioflow eval ocr``): test types in
:mod:`ocr.evaluation.checks`, table graphs in :mod:`ocr.evaluation.tables`, offline formula
comparison in :mod:`ocr.evaluation.math`, engine runs and scores in :mod:`ocr.evaluation.runner`."""

from ocr.evaluation.checks import TEST_TYPES, OcrTest, load_tests, parse_test
from ocr.evaluation.runner import OcrReport, TestOutcome, evaluate_ocr, with_baselines

__all__ = [
           "TEST_TYPES",
           "OcrReport",
           "OcrTest",
           "TestOutcome",
           "evaluate_ocr",
           "load_tests",
           "parse_test",
           "with_baselines",
]
