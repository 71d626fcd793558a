"""Checks of the chunker's promises, computed from the *input* Markdown independently of the
chunker's own parser (line scans and regexes), shared by the corpus, property and golden tests, by
the chunking benchmark (which applies the same table/formula checks to LangChain's chunks) and by
``folioflow eval chunks`` (:mod:`folioflow.chunking.evaluation`, over the chunks of an ingested collection).

Failures are returned as readable strings (empty list: all good) so a test can show every broken
promise of a document at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from folioflow.chunking.schema import Chunk, pack_token_ids
from folioflow.ocr.ids import sha256_text
from folioflow.ocr.schema import Document

_FORMULA = re.compile(r"\$\$.+?\$\$|\\\[.+?\\\]|^\\begin\{(\w+\*?)\}.+?^\\end\{\1\}|<math\b.+?</math>", re.DOTALL | re.MULTILINE)
_HTML_TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL | re.IGNORECASE)
_HTML_ROW = re.compile(r"<tr\b.*?</tr>", re.DOTALL | re.IGNORECASE)
_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)
_BLOCK_TAG = re.compile(r"</?(?:table|thead|tbody|tfoot|tr|td|th|br|p|div|li|ul|ol|caption)\b[^>]*>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")


def _strip_tags(html: str) -> str:
    """Text of HTML: block tags become spaces, inline tags (sup, sub, b, ...) vanish."""
    return _TAG.sub("", _BLOCK_TAG.sub(" ", html))

_DROP = re.compile(r"!\[[^\]]*\]\([^)]*\)|<!--.*?-->|<img\b[^>]*>", re.DOTALL)


def norm(text: str) -> str:
    """Whitespace-collapsed text (chunks join blocks with blank lines)."""
    return " ".join(text.split())


@dataclass
class SourceTable:
    """A table found in a page's Markdown: its header row(s) and body rows (normalised)."""

    page: int
    header: list[str]
    rows: list[str]
    fmt: str


@dataclass
class SourceFacts:
    tables: list[SourceTable] = field(default_factory=list)
    formulas: list[str] = field(default_factory=list)


def find_tables(markdown: str, page: int = 1) -> list[SourceTable]:
    """Pipe tables (a line run starting with ``|`` whose second line is a delimiter row) and HTML
    tables (first ``<tr>`` or the ``<thead>`` rows as header)."""
    out = []
    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("|") and i + 1 < len(lines) and re.match(r"^\s*\|?\s*:?-{1,}", lines[i + 1]) \
                and set(lines[i + 1].strip()) <= set("|-: "):
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            out.append(SourceTable(page, [norm(lines[i]), norm(lines[i + 1])], [norm(x) for x in lines[i + 2:j]], "pipe"))
            i = j
            continue
        i += 1
    for m in _HTML_TABLE.finditer(markdown):
        html = m.group(0)
        rows = [norm(r) for r in _HTML_ROW.findall(html)]
        thead = re.search(r"<thead\b.*?</thead>", html, re.DOTALL | re.IGNORECASE)
        n_head = len(_HTML_ROW.findall(thead.group(0))) if thead else 1
        if len(rows) > n_head:
            out.append(SourceTable(page, rows[:n_head], rows[n_head:], "html"))
    return out


def find_formulas(markdown: str) -> list[str]:
    """Display formulas: ``$$...$$``, ``\\[...\\]``, line-initial ``\\begin{env}...\\end{env}``,
    ``<math>...</math>`` (normalised)."""
    return [norm(m.group(0)) for m in _FORMULA.finditer(markdown)]


def source_facts(document: Document) -> SourceFacts:
    facts = SourceFacts()
    for page in document.pages:
        facts.tables += find_tables(page.markdown, page.number)
        facts.formulas += find_formulas(page.markdown)
    return facts


def table_failures(tables: list[SourceTable], texts: list[str], parts: list[tuple[int, int] | None] | None = None,
                   rows_as_text: list[bool] | None = None) -> tuple[int, list[str]]:
    """(number of tables cut, reasons). A table is cut when one of its rows is in no chunk
    intact, or a chunk holds some but not all of its rows without its header row (or, when
    ``parts`` is given, without a part number). Chunks flagged ``rows_as_text`` (the key:value
    fallback) count as holding the rows whose cell values they contain."""
    cut, reasons = 0, []
    normed = [norm(t) for t in texts]
    lines = [{norm(ln) for ln in t.split("\n")} for t in texts]

    def holds(c: int, row: str, fmt: str) -> bool:  # pipe rows are whole lines; HTML rows anywhere
        return row in lines[c] if fmt == "pipe" else row in normed[c]
    kv_text = " ".join(t for t, flag in zip(normed, rows_as_text or [], strict=False) if flag)  # no flags: none
    seen: dict[str, int] = {}
    for table in tables:  # a row that is also another table's row or header cannot attribute a chunk
        for row in set(table.rows) | set(table.header[:1]):
            seen[row] = seen.get(row, 0) + 1
    for k, table in enumerate(tables):
        problems = []
        holders: dict[int, set[int]] = {}
        unique = [r for r, row in enumerate(table.rows) if seen[row] == 1 and table.rows.count(row) == 1]
        for r, row in enumerate(table.rows):
            found = [c for c in range(len(texts)) if holds(c, row, table.fmt)]
            if not found and not (kv_text and _cells_in(row, kv_text, table.fmt)):
                problems.append(f"row {r} not intact in any chunk: {row[:80]!r}")
            if r in unique:  # rows repeated in other tables cannot tell which table a chunk holds
                for c in found:
                    holders.setdefault(c, set()).add(r)
        for c, rows in holders.items():
            if len(rows) == len(unique) or (rows_as_text and rows_as_text[c]):
                continue
            if not any(holds(c, h, table.fmt) for h in table.header[:1]) and not _has_any_header(lines[c] | {normed[c]}, tables, table):
                problems.append(f"chunk {c} holds rows {sorted(rows)[:5]} without a header row")
            if parts is not None and parts[c] is None:
                problems.append(f"chunk {c} holds part of the table without a part number")
        if problems:
            cut += 1
            reasons.append(f"table {k} (page {table.page}): " + "; ".join(problems[:3]))
    return cut, reasons


def _has_any_header(texts: set[str], tables: list[SourceTable], table: SourceTable) -> bool:
    """A continued table's parts repeat the header of the table it continues (previous page)."""
    return any(t is not table and t.page < table.page and t.header and any(t.header[0] in x for x in texts)
               for t in tables)


def _cells_in(row: str, text: str, fmt: str) -> bool:
    if fmt == "pipe":
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row) if c.strip()]
    else:
        cells = [norm(_strip_tags(c)) for c in re.findall(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", row, re.DOTALL)]
        cells = [c for c in cells if c]
    return all(c in text for c in cells)


def formula_failures(formulas: list[str], texts: list[str]) -> tuple[int, list[str]]:
    """(number of formulas cut, reasons): a formula is cut when no chunk holds it whole."""
    normed = [norm(t) for t in texts]
    bad = [f for f in formulas if not any(f in t for t in normed)]
    return len(bad), [f"formula not whole in any chunk: {f[:80]!r}" for f in bad]


def expected_heading_paths(markdown_pages: list[str]) -> list[tuple[str, list[str]]]:
    """(normalised paragraph start, heading path) for every plain paragraph of at least 40
    characters, from ATX headings as written (levels not inferred)."""
    out = []
    stack: list[tuple[int, str]] = []
    for md in markdown_pages:
        in_fence = False
        for block in re.split(r"\n\s*\n", md):
            first = block.strip().split("\n")[0] if block.strip() else ""
            if first.startswith("```"):
                in_fence = not in_fence if block.strip().count("```") % 2 else in_fence
                continue
            if in_fence:
                continue
            m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", first)
            if m and "\n" not in block.strip():
                level = len(m.group(1))
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, norm(_unescape(re.sub(r"`|(?<![\w\\])[*_]+|[*_]+(?!\w)", "", m.group(2))))))
                continue
            text = block.strip()
            if len(text) >= 40 and re.match(r"^[A-Za-z(\"']", text) and not text.startswith(("<", "|", "$", "\\")):
                out.append((norm(text)[:40], [t for _, t in stack]))
    return out


def check_chunks(document: Document, chunks: list[Chunk], counter, max_tokens: int,
                 check_paths: bool = False) -> list[str]:
    """Every promise the chunker makes on one document; the list of broken ones."""
    errors: list[str] = []
    if [c.index for c in chunks] != list(range(len(chunks))):
        errors.append("indexes are not 0..n-1")
    counts = counter.count_batch([c.embed_text for c in chunks]) if chunks else []
    ids_batch = getattr(counter, "ids_batch", None)
    ids = ids_batch([c.embed_text for c in chunks]) if callable(ids_batch) and chunks else [None] * len(chunks)
    pages = {p.number for p in document.pages}
    for c, n, want in zip(chunks, counts, ids, strict=True):
        if c.doc_id != document.doc_id:
            errors.append(f"chunk {c.index}: wrong doc id")
        if want is not None and c.token_ids is not None and c.token_ids != pack_token_ids(want):
            errors.append(f"chunk {c.index}: token_ids are not the counter's ids of embed_text")
        if n > max_tokens:
            errors.append(f"chunk {c.index}: {n} tokens > {max_tokens}")
        if n != c.token_count:
            errors.append(f"chunk {c.index}: token_count {c.token_count} != counted {n}")
        if c.content_hash != sha256_text(c.embed_text):
            errors.append(f"chunk {c.index}: content hash is not sha256(embed_text)")
        if not (c.page_start <= c.page_end and c.page_start in pages and c.page_end in pages):
            errors.append(f"chunk {c.index}: bad page span {c.page_start}-{c.page_end}")
        title = c.metadata.get("document_title")
        shown = c.embed_text[len(title) + 1:] if title and c.embed_text.startswith(title + "\n") else c.embed_text
        if title and shown is c.embed_text:
            errors.append(f"chunk {c.index}: embedded text does not start with the document title")
        if c.heading_path and not c.metadata.get("heading_path_rendered") and not shown.startswith("\n".join(c.heading_path)):
            errors.append(f"chunk {c.index}: embedded text does not start with its heading path")
        if c.part is not None and not (1 <= c.part[0] <= c.part[1]):
            errors.append(f"chunk {c.index}: bad part {c.part}")
        for pb in c.bboxes:
            if not (c.page_start <= pb.page <= c.page_end):
                errors.append(f"chunk {c.index}: bbox on page {pb.page} outside its span")
    texts = [c.text for c in chunks]
    facts = source_facts(document)
    _, reasons = table_failures(facts.tables, texts, [c.part for c in chunks],
                                [bool(c.metadata.get("table_rows_as_text")) for c in chunks])
    errors += reasons
    _, reasons = formula_failures(facts.formulas, texts)
    errors += reasons
    errors += coverage_failures(document, chunks)
    if check_paths:
        errors += path_failures(document, chunks)
    return errors


def coverage_failures(document: Document, chunks: list[Chunk]) -> list[str]:
    """Every word (3+ letters/digits, outside HTML tags, image links and comments) of every page is
    in the text of a chunk whose page span covers that page: nothing lost, page spans right.
    Exempt: heading words found in some chunk's heading path, and page furniture (blocks the engine
    labelled page header/footer, or text some chunk lists in its page header/footer metadata)."""
    from folioflow.ocr.schema import BlockType

    anywhere: set[str] = set()
    for c in chunks:
        anywhere.update(_WORD.findall(" ".join(c.heading_path)))
        anywhere.update(_WORD.findall(" ".join(c.metadata.get("page_headers", []) + c.metadata.get("page_footers", []))))
    errors = []
    for page in document.pages:
        source = _strip_tags(_DROP.sub(" ", page.markdown))
        if source.startswith("---\n"):
            source = source.split("\n---", 1)[-1]
        words = set(_WORD.findall(_unescape(source)))
        for block in page.blocks:
            if block.type in (BlockType.PAGE_HEADER, BlockType.PAGE_FOOTER):
                words -= set(_WORD.findall(_unescape(block.text)))
        covered: set[str] = set(anywhere)
        for c in chunks:
            if c.page_start <= page.number <= c.page_end:
                covered.update(_WORD.findall(_unescape(_strip_tags(_DROP.sub(" ", c.text)))))  # as the page's words
        missing = words - covered
        if missing:
            errors.append(f"page {page.number}: {len(missing)} words in no chunk covering it, e.g. {sorted(missing)[:5]}")
    return errors


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def path_failures(document: Document, chunks: list[Chunk]) -> list[str]:
    """Each long plain paragraph is in a chunk whose heading path is the path of its headings."""
    errors = []
    normed = [(norm(c.text), c.heading_path) for c in chunks]
    for start, path in expected_heading_paths([p.markdown for p in document.pages]):
        holders = [hp for t, hp in normed if start in t]
        if holders and path not in holders:
            errors.append(f"paragraph {start!r}: heading path {holders[0]} != expected {path}")
    return errors
