"""Regenerate ``olmocr_bench_upstream.json``: folioflow's text-layer Markdown of the olmOCR-bench
sample pages (``../shared/corpus/D_layout_math_tables/olmocr_bench``) and the pass/fail that
allenai/olmocr's *own* test code gives on it, so ``test_ocr_eval_conformance.py`` can check that
folioflow's re-implementation agrees with the original rule for rule (math tests excluded: the
original renders them in a headless browser).

Steps (not run by the test suite)::

    # 1. a checkout of allenai/olmocr (the JSON records the commit used)
    git clone https://github.com/allenai/olmocr /tmp/olmocr
    # 2. our page outputs
    folioflow eval ocr --tests $B/dataset.jsonl --tests $B/blanks.jsonl --pdfs $B/pdfs --engine text --json /tmp/text.json
    # 3. this script (needs rapidfuzz, fuzzysearch, beautifulsoup4, tqdm)
    python tests/ocr/golden/regenerate_olmocr_upstream.py /tmp/olmocr /tmp/text.json $B tests/ocr/golden/olmocr_bench_upstream.json [COMMIT]

(``COMMIT`` names the olmocr commit when the checkout is an export without git metadata.)

The olmocr package is not imported as a whole (it needs Playwright and a browser): its
``bench/tests.py``, ``bench/table_parsing.py`` and ``repeatdetect.py`` are copied into a temporary
package with a stub ``bench/katex/render.py``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def main(checkout: str, run_json: str, bench: str, out: str, commit: str = "") -> None:
    root = Path(tempfile.mkdtemp())
    pkg = root / "olmocr"
    (pkg / "bench" / "katex").mkdir(parents=True)
    for rel in ("bench/tests.py", "bench/table_parsing.py", "repeatdetect.py"):
        shutil.copy(Path(checkout) / "olmocr" / rel, pkg / rel)
    for init in (pkg, pkg / "bench", pkg / "bench" / "katex"):
        (init / "__init__.py").touch()
    (pkg / "bench" / "katex" / "render.py").write_text(
        "def render_equation(*a, **k):\n    return object()\n\ndef compare_rendered_equations(a, b):\n    return False\n")
    sys.path.insert(0, str(root))
    from olmocr.bench import tests as ref

    commit = commit or subprocess.run(["git", "-C", checkout, "rev-parse", "HEAD"], capture_output=True, check=False,
                                      text=True).stdout.strip()
    run = json.loads(Path(run_json).read_text())["engines"][0]
    rows = [json.loads(line) for name in ("dataset.jsonl", "blanks.jsonl")
            for line in (Path(bench) / name).read_text().splitlines() if line.strip()]
    pages = {key: page["markdown"] for key, page in run["pages"].items() if "markdown" in page}
    expected: dict[str, dict[str, bool]] = {}
    for key, markdown in pages.items():
        pdf, page = key.rsplit("#", 1)
        for row in rows:
            if row["pdf"] == pdf and row["page"] == int(page) and row["type"] != "math":
                expected.setdefault(key, {})[row["id"]] = ref.load_single_test(dict(row)).run(markdown)[0]
        default = ref.BaselineTest(pdf=pdf, page=int(page), id="baseline", type="baseline")
        expected.setdefault(key, {})["__baseline__"] = default.run(markdown)[0]
    Path(out).write_text(json.dumps({"source": f"allenai/olmocr olmocr/bench/tests.py at {commit}",
                                     "engine": run["engine"], "pages": pages, "expected": expected},
                                    indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main(*sys.argv[1:6])
