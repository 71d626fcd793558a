"""Fixtures for the indexing tests: the real default embedder (MiniLM, CPU), realistic documents
built from the project's sample report, and CUAD contracts from the corpus when present."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from folioflow.chunking.schema import Chunk, ChunkKind
from folioflow.indexing.registry import DocumentRecord
from folioflow.ocr.ids import doc_id_for, sha256_text
from folioflow.ocr.samples import SAMPLE_FACTS, SAMPLE_TABLE

#: A realistic two-document corpus (the sample annual report's statements, plus a services
#: agreement), as (path, [(heading_path, kind, text, page)]).
SAMPLE_DOCS = {
    "northwind-annual-report-2025.pdf": [
        (["Financial Highlights"], "text", SAMPLE_FACTS["revenue"] + " Net new assets under management reached "
         "$38 billion, the highest inflow in the firm's history.", 1),
        (["Financial Highlights"], "text", SAMPLE_FACTS["margin"] + " Headcount was stable at 2,340 employees.", 1),
        (["Financial Highlights", "Consolidated Statement of Operations"], "table",
         "\n".join("| " + " | ".join(r) + " |" for r in SAMPLE_TABLE), 1),
        (["Risk-Adjusted Return"], "formula", "$$S = (R_p - R_f) / \\sigma_p$$ " + SAMPLE_FACTS["sharpe"], 2),
        (["Governing Law"], "text", SAMPLE_FACTS["law"] + " Any dispute arising under this Agreement shall be "
         "resolved exclusively in the state or federal courts located in Wilmington, Delaware.", 2),
    ],
    "acme-services-agreement.pdf": [
        (["Term and Termination"], "text", ("This Agreement commences on the Effective Date and continues for "
         "three years. Either party may terminate for convenience on ninety days' written notice."), 1),
        (["Fees"], "text", ("Customer shall pay the fees set out in Schedule B within thirty days of invoice. "
         "Late payments accrue interest at one percent per month."), 1),
        (["Confidentiality"], "text", ("Each party shall keep the other's Confidential Information secret and "
         "use it only to perform this Agreement, for five years after termination."), 2),
        (["Governing Law"], "text", ("This Agreement is governed by the laws of the State of New York, without "
         "regard to its conflict of laws rules."), 3),
    ],
}


def make_document(path: str, parts, source: str = "default", tenant: str | None = None,
                  version: str = "v1") -> tuple[DocumentRecord, list[Chunk]]:
    """A registry record and its chunks for ``parts`` = [(heading_path, kind, text, page)]."""
    uri = f"s3://folioflow-tests/{source}/{path}"
    doc_id = doc_id_for(uri)
    chunks = []
    for i, (heading, kind, text, page) in enumerate(parts):
        embed = " > ".join(heading) + "\n\n" + text
        chunks.append(Chunk(doc_id=doc_id, index=i, kind=ChunkKind(kind), text=text, embed_text=embed,
                            heading_path=list(heading), page_start=page, page_end=page,
                            token_count=len(embed.split()), content_hash=sha256_text(embed)))
    content = sha256_text(version + "".join(c.embed_text for c in chunks))
    record = DocumentRecord(doc_id=doc_id, uri=uri, path=path, source=source, tenant=tenant, content_hash=content,
                            pages=max((p[3] for p in parts), default=0), engines=["text"] * 3)
    return record, chunks


def sample_documents(source: str = "default", tenant: str | None = None):
    """The two :data:`SAMPLE_DOCS` as (record, chunks)."""
    return [make_document(path, parts, source, tenant) for path, parts in SAMPLE_DOCS.items()]


class CachedEmbedder:
    """The real :class:`~folioflow.indexing.embedder.Embedder`, memoising vectors per text: the suites embed
    the same sample chunks in many tests, and a CPU shared with other work makes that the bulk of
    their time. Texts not seen before go to the model; everything else is delegated."""

    def __init__(self, inner):
        self.inner, self._cache = inner, {}

    def encode(self, texts):
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for t, v in zip(missing, self.inner.encode(missing), strict=True):
                self._cache[t] = v
        if not texts:
            return self.inner.encode([])
        return np.stack([self._cache[t] for t in texts])

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture(scope="session")
def embedder():
    """The default embedding model on the CPU, loaded once (vectors memoised per text)."""
    from folioflow.indexing.embedder import Embedder

    return CachedEmbedder(Embedder(device="cpu").warm_up())


def cuad_contracts(corpus: Path, count: int) -> list[tuple[str, str, str]]:
    """(name, text, governing-law answer) of the first ``count`` CUAD contracts whose ground truth
    names a governing law and whose reference text is present."""
    out = []
    with (corpus / "B_legal" / "cuad" / "groundtruth" / "master_clauses.csv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            answer = (row.get("Governing Law-Answer") or "").strip()
            txt = corpus / "B_legal" / "cuad" / "txt" / (Path(row["Filename"]).stem + ".txt")
            if answer and txt.is_file():
                out.append((txt.stem, txt.read_text(encoding="utf-8", errors="replace"), answer))
            if len(out) == count:
                break
    return out


def text_parts(text: str, words: int = 120) -> list:
    """Real text cut into consecutive windows of ``words`` words, three windows per 'page'."""
    toks = re.split(r"\s+", text.strip())
    return [(["Contract"], "text", " ".join(toks[i:i + words]), i // (3 * words) + 1)
            for i in range(0, len(toks), words)]
