"""OCR evaluation on olmOCR-bench-format tests (``folioflow eval ocr``): test types in
:mod:`folioflow.ocr.evaluation.checks`, table graphs in :mod:`folioflow.ocr.evaluation.tables`, offline formula
comparison in :mod:`folioflow.ocr.evaluation.math`, engine runs and scores in :mod:`folioflow.ocr.evaluation.runner`."""

from folioflow.ocr.evaluation.checks import TEST_TYPES, OcrTest, load_tests, parse_test
from folioflow.ocr.evaluation.runner import OcrReport, TestOutcome, evaluate_ocr, with_baselines

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
