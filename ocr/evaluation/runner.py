"""Run a page engine over the pages named by olmOCR-bench tests and score them.

Every PDF is converted once with :class:`~folioflow.ocr.converter.DocumentConverter` (only the tested pages,
through ``page_range``); each test runs on its page's Markdown. A document that cannot be opened or
a page that failed gives empty output, so its tests fail with the reason attached (never a crash).
Scores: pass rate per test type and overall (passed / tests), plus the mean of per-PDF pass rates;
olmOCR-bench's published "overall" is the mean of per-JSONL-file rates, which equals the overall
rate when one file is scored. One baseline test is added for each tested page without one (as
olmOCR-bench adds one per PDF).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from folioflow.ocr.converter import DocumentConverter, DocumentInput
from folioflow.ocr.errors import FolioflowError
from folioflow.ocr.evaluation.checks import BaselineTest, OcrTest
from folioflow.ocr.schema import PageStatus, SourceRef

__all__ = ["OcrReport", "TestOutcome", "evaluate_ocr", "page_outputs", "with_baselines"]


@dataclass
class TestOutcome:
    """One test's result: ``passed`` and the reason when it failed."""

    id: str
    pdf: str
    page: int
    type: str
    passed: bool
    explanation: str
    check: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class OcrReport:
    """Scores of one engine. ``by_type[type] = {"passed", "total", "rate"}``; ``pages`` maps
    ``"pdf#page"`` to ``{"engine", "status", "seconds", "chars", "markdown"}`` (the output the tests
    ran on, so a failure can be read against it) or ``{"engine", "status", "error"}``."""

    engine: str
    outcomes: list[TestOutcome] = field(default_factory=list)
    pages: dict[str, dict] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def by_type(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for o in self.outcomes:
            row = out.setdefault(o.type, {"passed": 0, "total": 0})
            row["total"] += 1
            row["passed"] += o.passed
        for row in out.values():
            row["rate"] = row["passed"] / row["total"]
        return dict(sorted(out.items()))

    @property
    def overall(self) -> float:
        return sum(o.passed for o in self.outcomes) / len(self.outcomes) if self.outcomes else 0.0

    @property
    def per_pdf_mean(self) -> float:
        groups: dict[str, list[bool]] = defaultdict(list)
        for o in self.outcomes:
            groups[o.pdf].append(o.passed)
        return sum(sum(v) / len(v) for v in groups.values()) / len(groups) if groups else 0.0

    def failures(self) -> list[TestOutcome]:
        return [o for o in self.outcomes if not o.passed]

    def as_dict(self) -> dict:
        return {"engine": self.engine, "overall": self.overall, "per_pdf_mean": self.per_pdf_mean,
                "tests": len(self.outcomes), "passed": sum(o.passed for o in self.outcomes),
                "by_type": self.by_type, "seconds": self.seconds, "pages": self.pages,
                "outcomes": [o.as_dict() for o in self.outcomes]}


def with_baselines(tests: Sequence[OcrTest]) -> list[OcrTest]:
    """``tests`` plus a default :class:`BaselineTest` for each (pdf, page) that has none."""
    have = {(t.pdf, t.page) for t in tests if t.type == "baseline"}
    extra = []
    for pdf, page in dict.fromkeys((t.pdf, t.page) for t in tests):
        if (pdf, page) not in have:
            extra.append(BaselineTest(pdf=pdf, page=page, id=f"{pdf}_pg{page}_baseline", type="baseline"))
    return list(tests) + extra


def page_outputs(converter: DocumentConverter, pdf_dir: Path, wanted: dict[str, list[int]],
                 on_page: Callable[[], None] | None = None) -> tuple[dict[tuple[str, int], str], dict[str, dict]]:
    """Markdown of every wanted page (``{pdf: [pages]}``) and per-page facts; unreadable documents
    and failed pages give ``""`` and an ``error`` entry."""
    outputs: dict[tuple[str, int], str] = {}
    facts: dict[str, dict] = {}
    for pdf, pages in wanted.items():
        path = pdf_dir / pdf
        converter.options.page_range = ",".join(str(p) for p in sorted(set(pages)))
        try:
            document = converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.resolve().as_uri(), path=pdf)))
        except FolioflowError as exc:
            for p in pages:
                outputs[(pdf, p)] = ""
                facts[f"{pdf}#{p}"] = {"engine": None, "status": "failed", "error": str(exc)}
                if on_page:
                    on_page()
            continue
        got = {p.number: p for p in document.pages}
        for p in sorted(set(pages)):
            page = got.get(p)
            if page is None:
                outputs[(pdf, p)] = ""
                facts[f"{pdf}#{p}"] = {"engine": None, "status": "failed",
                                       "error": f"page {p} outside 1..{document.page_count}"}
            else:
                outputs[(pdf, p)] = page.markdown if page.status != PageStatus.FAILED else ""
                facts[f"{pdf}#{p}"] = {"engine": page.engine, "status": page.status.value,
                                       "seconds": round(page.seconds or 0.0, 3), "chars": len(page.markdown),
                                       "markdown": outputs[(pdf, p)],
                                       **({"error": "; ".join(page.errors)} if page.errors else {})}
            if on_page:
                on_page()
    return outputs, facts


def evaluate_ocr(tests: Sequence[OcrTest], pdf_dir: str | Path, converter: DocumentConverter, engine_label: str,
                 add_baselines: bool = True, on_page: Callable[[], None] | None = None) -> OcrReport:
    """Convert the tested pages with ``converter`` and run every test (see module docstring)."""
    tests = with_baselines(tests) if add_baselines else list(tests)
    wanted: dict[str, list[int]] = defaultdict(list)
    for t in tests:
        wanted[t.pdf].append(t.page)
    started = time.perf_counter()
    outputs, facts = page_outputs(converter, Path(pdf_dir), wanted, on_page)
    report = OcrReport(engine=engine_label, pages=facts, seconds=time.perf_counter() - started)
    for t in tests:
        content = outputs.get((t.pdf, t.page), "")
        error = facts.get(f"{t.pdf}#{t.page}", {}).get("error")
        try:
            passed, why = t.run(content)
        except Exception as exc:  # noqa: BLE001 - a test must never stop the evaluation; the reason names it
            passed, why = False, f"test raised {type(exc).__name__}: {exc}"
        if not passed and error and not content:
            why = f"{why} (page not converted: {error})"
        report.outcomes.append(TestOutcome(t.id, t.pdf, t.page, t.type, passed, why, t.describe()))
    return report
