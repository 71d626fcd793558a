"""Structure-aware chunking of a converted :class:`~folioflow.ocr.schema.Document`.

Pipeline (one module per step):

1. :mod:`folioflow.chunking.parse` - each page's Markdown into typed blocks (markdown-it-py);
   :mod:`folioflow.chunking.bboxes` - the engine's layout blocks give them bboxes and header/footer labels.
2. :mod:`folioflow.chunking.headers` - repeating page headers/footers found and set aside as metadata.
3. Tables continued on the next page (same column count, nothing but furniture between) are
   merged (:func:`folioflow.chunking.tables.merge_continued`); a caption right before a table travels with it.
4. :mod:`folioflow.chunking.sections` - the heading tree across pages gives every block its heading path;
   :mod:`folioflow.chunking.roles` - a contract's party, definitions and signature blocks become
   sections of their own, their chunks marked with ``metadata["role"]``.
5. :mod:`folioflow.chunking.pieces` - blocks become unsplittable pieces within the section's budget.
6. :mod:`folioflow.chunking.packing` - pieces are packed greedily and every chunk is checked exactly.

The invariant: for every chunk, ``counter.count(chunk.embed_text) == chunk.token_count <=
max_tokens``, where ``embed_text = contextualize(rendered heading path, compact_tables(text))`` (the
rendered path is the full path unless it was shortened, see :func:`folioflow.chunking.sections.fit_heading_path`;
tables are written one line per row, see :func:`folioflow.chunking.tables.compact_tables`, unless
``table_embed`` is ``"markdown"``; for a
formula larger than the limit the embedded text holds the longest prefix of the formula that fits,
while ``text`` keeps the whole formula: ``metadata["embed_truncated"]``).
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from folioflow.chunking.bboxes import attach_layout
from folioflow.chunking.headers import (
    collect_furniture,
    engine_furniture,
    join_split_sentences,
    mark_furniture,
    mark_page_numbers,
)
from folioflow.chunking.packing import join_pieces, pack, repair
from folioflow.chunking.parse import MdBlock, ParsedPage, parse_markdown
from folioflow.chunking.pieces import Measure, Piece, block_pieces
from folioflow.chunking.roles import PARTIES, ROLE, split_by_role
from folioflow.chunking.schema import Chunk, ChunkKind, PageBBox, pack_token_ids
from folioflow.chunking.sections import Section, build_sections, contextualize, fit_heading_path
from folioflow.chunking.tables import compact_tables, merge_continued, parse_table
from folioflow.chunking.tokens import TokenCounter, default_counter
from folioflow.ocr.errors import ChunkingError, ConfigurationError
from folioflow.ocr.ids import sha256_text
from folioflow.ocr.schema import Document, PageStatus

__all__ = ["CHUNKER_VERSION", "Chunker", "ChunkerOptions", "contextualize", "document_title"]

#: Bump when the chunks made from the same document and options change (part of the index
#: fingerprint, :func:`folioflow.flows.stages.index_fingerprint`, so indexed documents are re-chunked).
#: 2: engine page headers/footers kept as chunk metadata; repeated sentences stay in the body once.
#: 3: contract party/definitions/signature blocks in chunks of their own (``metadata["role"]``); the
#: converter's clause headings (:mod:`folioflow.ocr.layout.clauses`) change the sections.
#: 4: party blocks also from "agree as follows" preambles and amendments bound after their agreement.
#: 5: furniture by band; a section's first chunk starts on its heading's page.
#: 6: a table whose header leaves no room for rows is split by lines (its header was dropped).
#: 7: "X and Y hereby enter into this Agreement" preambles are party blocks; only a party block's first
#:    chunk carries the role.
#: 8: the converter reads clause structure again after the furniture review (a clause number or an
#:    exhibit label alone in a page's top margin joins its text or becomes a heading).
#: 9: unnumbered clause titles in capitals ("TERM AND TERMINATION") and capital Roman-numbered ones
#:    ("IV. INDEMNIFICATION") are headings.
#: 10: a signing party's name that typography made a heading is text of its signature block; a quoted
#:    defined term and an "Att." address line open no clause title; "VIII. CONFIDENTIAL DATA" is one.
#: 11: a signature block split over short lines is the signature role.
#: 12: printed page numbers inside the page body are footers.
#: 13: a signature block takes its lead-in lines; its heading path stops above the clauses it follows.
#: 14: a lead-in line that names a month stays text.
#: 15: a contract's table of contents makes no clause headings; its blocks are chunks of the role
#:    ``contents``; a clause number indented in its paragraph's first line joins that paragraph.
#: 16: a sentence cut by a printed page number mid-page or by a PDF page break is one paragraph
#:    again; a printed page number above a numbered title ("Section 5.2 ...") is a footer; a title in
#:    title case that ends with a stop is a clause title ("Section 2. Appointment of the Agent.").
CHUNKER_VERSION = "16"


def document_title(document: Document) -> str:
    """The title put above the embedded text with ``ChunkerOptions.document_title``: the source's
    ``title`` metadata when set (one for every document of the source), else the file name without
    its extension, with ``_`` and ``-`` read as spaces (``3M_2018_10K.pdf`` -> ``3M 2018 10K``).

    Decision: the PDF's own Title field is not used: in the FinanceBench filings it is an SEC
    accession number (``0000764478-17-000008``), a word-processor name (``Microsoft Word -
    F20_10K_VFinal_07.01.2020``) or empty for most files, while file names in a legal or finance
    store usually name the party, period and form.

    Off by default: on 16 FinanceBench filings (16 questions) it did not raise evidence-page hit@5
    (dense 0.438 -> 0.375, hybrid 0.312 -> 0.312; ``tests/benchmarks/bench_retrieval.py
    --no-baseline --variant-chunking '{"document_title": true}'``)."""
    return document.source.title


class ChunkerOptions(BaseModel):
    """Chunking settings. Token figures are in the embedding model's tokens."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: int | None = Field(default=None, ge=16, description="Limit per embedded text, special tokens included; None: the counter's limit (may only lower it)")
    max_heading_tokens: int | None = Field(default=None, ge=1, description="Most tokens the rendered heading path may take; None: a quarter of the limit")
    overlap_tokens: int = Field(default=0, ge=0, description="Text overlap between consecutive text chunks of a section (whole sentences/items, at most this many tokens)")
    merge_small: bool = Field(default=True, description="Pack small neighbouring blocks of one section into one chunk")
    merge_tables_with_text: bool = Field(default=True, description="A table that fits may share a chunk with neighbouring text (kind 'mixed')")
    strip_furniture: bool = Field(default=True, description="Keep page headers/footers out of chunk text (always kept in metadata)")
    furniture_min_pages: int = Field(default=3, ge=0, description="Pages an edge block must repeat on to be a header/footer (bare page numbers: 2); below 2 turns repetition detection off")
    furniture_edge_blocks: int = Field(default=2, ge=1, description="Blocks at the top/bottom of a page considered as header/footer candidates")
    merge_continued_tables: bool = Field(default=True, description="Merge a table with its continuation on the next page before splitting")
    join_split_sentences: bool = Field(default=True, description="Join a paragraph that a page break or a printed page number cut mid-sentence to its continuation, so the sentence stays in one chunk (chunking.headers.join_split_sentences)")
    attach_captions: bool = Field(default=True, description="A caption right before a table stays with it (and is repeated in its parts)")
    table_lead_in: bool = Field(default=True, description="Up to two short paragraphs right before a table on its page (a statement's title, 'Year Ended December 31,') become its caption (see Chunker._captions)")
    max_lead_in_tokens: int = Field(default=48, ge=1, description="Most tokens a table's lead-in paragraphs may take together")
    table_embed: Literal["rows", "markdown"] = Field(default="rows", description="How tables are written in the embedded text: 'rows' one line per row, non-empty cells joined by ' | ' (chunking.tables.compact_tables; the chunk's text keeps the Markdown), 'markdown' as in the text")
    infer_heading_levels: bool = Field(default=True, description="Nest numbered headings by their numbers when the Markdown has only one heading level")
    language: str = Field(default="en", description="Sentence-splitting rules (pysbd language code)")
    document_title: bool = Field(default=False, description="Put the document's title (see document_title()) above the heading path in every embedded text")
    max_title_tokens: int = Field(default=24, ge=1, description="Most tokens the document title line may take (longer titles are cut with an ellipsis)")


class Chunker:
    """Chunks documents for one embedding model.

    ``counter``: the model's :class:`TokenCounter` (``None``: all-MiniLM-L6-v2's tokenizer,
    256 tokens). Raises :class:`ConfigurationError` when the options ask for a larger limit than the
    model allows.
    """

    def __init__(self, counter: TokenCounter | None = None, options: ChunkerOptions | None = None):
        self.counter = counter or default_counter()
        self.options = options or ChunkerOptions()
        limit = self.options.max_tokens or self.counter.max_tokens
        if limit > self.counter.max_tokens:
            raise ConfigurationError(f"max_tokens {limit} exceeds the model's limit {self.counter.max_tokens}")
        self.max_tokens = limit
        self.specials = self.counter.count("")
        self.max_heading_tokens = self.options.max_heading_tokens or max(1, limit // 4)
        title_tokens = self.options.max_title_tokens + 1 if self.options.document_title else 0  # +1: its line break
        if self.max_heading_tokens + title_tokens > limit - self.specials - 8:
            raise ConfigurationError("max_heading_tokens" + (" + max_title_tokens" if title_tokens else "")
                                     + " leaves fewer than 8 tokens for text")
        batch = getattr(self.counter, "count_batch", None)
        self._count_batch = batch if callable(batch) else (lambda texts: [self.counter.count(t) for t in texts])
        ids = getattr(self.counter, "ids_batch", None)
        self._ids_batch = ids if callable(ids) else None
        self.join_tokens = max(0, self.counter.count("word\n\nword") - 2 * self.counter.count("word") + self.specials)
        self.measure = Measure(content=lambda t: self.counter.count(t) - self.specials,
                               content_batch=lambda ts: [n - self.specials for n in self._count_batch(ts)],
                               language=self.options.language, compact_tables=self.options.table_embed == "rows")

    # -- public -------------------------------------------------------------------------------
    def chunk(self, document: Document) -> list[Chunk]:
        """Chunks of ``document`` in reading order (``index`` 0..n-1). Failed or empty pages add
        nothing; a document without text gives ``[]``. Raises :class:`ChunkingError` only if the
        limit cannot be met (not reachable with the checked options)."""
        pages = self._parse(document)
        furniture = collect_furniture(pages)
        blocks = [b for p in pages for b in p.blocks if not (b.furniture and self.options.strip_furniture)]
        if not blocks:  # furniture is all there is (a form repeated on every page): keep it as text
            blocks = [b for p in pages for b in p.blocks]
        if self.options.merge_continued_tables:
            blocks = self._merge_tables(blocks, pages)
        with_roles = split_by_role(build_sections(blocks, infer_levels=self.options.infer_heading_levels))
        sections = [s for s, _ in with_roles]
        roles = [r for _, r in with_roles]
        tokens = self.measure.content_batch([b.text for b in blocks])
        block_tokens = {id(b): n for b, n in zip(blocks, tokens, strict=True)}
        title = self._title_lines(document)
        plans = [self._plan(s, block_tokens, _has_children(s, sections[i + 1] if i + 1 < len(sections) else None), title)
                 for i, s in enumerate(sections)]
        # the embedded text of every group, by id: built once, counted, then kept for its chunk (a group
        # the repair pass makes is measured before it is kept, so its entry is its own text)
        embeds = {id(g): self._embed(rendered, g) for rendered, _, groups in plans for g in groups}
        texts = list(embeds.values())
        token_ids: dict[str, list[int]] = {}
        if self._ids_batch is not None:  # one tokenization gives the counts and the ids kept for the embedder
            token_ids = dict(zip(texts, self._ids_batch(texts), strict=True))
            counts = iter([len(token_ids[t]) for t in texts])
        else:
            counts = iter(self._count_batch(texts))
        chunks: list[Chunk] = []
        # the page of a heading that opened no chunk of its own (a section with subsections only, or
        # all of whose text is furniture): the next chunk starts there, so a page that ends with a
        # heading ("ITEM 6. [RESERVED]", a contract's title) is in the span of the chunk it opens
        opened: int | None = None
        for section, role, (rendered, budget, groups) in zip(sections, roles, plans, strict=True):
            known = [next(counts) for _ in groups]
            if section.heading is not None:
                opened = section.heading.page if opened is None else min(opened, section.heading.page)

            def measure(group: list[Piece], rendered: list[str] = rendered) -> int:
                embeds[id(group)] = embedded = self._embed(rendered, group)
                return self.counter.count(embedded)

            for part, (group, n) in enumerate(repair(groups, measure, self.max_tokens, budget, known)):
                # a party block is the preamble's opening: a preamble paragraph long enough to fill more
                # than one chunk (its list of services, its recitals run on) goes on as ordinary content
                own = None if role == PARTIES and part else role
                chunks.append(self._make_chunk(document, len(chunks), section, rendered, group, embeds[id(group)], n,
                                               furniture, len(title), own, opened))
                opened = None
        self._number_parts(chunks)
        keep_bodiless_furniture(chunks, furniture)
        if self._ids_batch is not None:
            self._attach_token_ids(chunks, token_ids)
        return chunks

    def _attach_token_ids(self, chunks: list[Chunk], known: dict[str, list[int]]) -> None:
        """``Chunk.token_ids`` (int32 bytes) from the ids tokenized with the counts; chunks the
        repair pass made (their text was counted alone) are tokenized here, in one call."""
        missing = list(dict.fromkeys(c.embed_text for c in chunks if c.embed_text not in known))
        if missing:
            assert self._ids_batch is not None  # called only when the counter gives ids
            known = {**known, **dict(zip(missing, self._ids_batch(missing), strict=True))}
        for c in chunks:
            c.token_ids = pack_token_ids(known[c.embed_text])

    # -- steps --------------------------------------------------------------------------------
    def _parse(self, document: Document) -> list[ParsedPage]:
        pages: list[ParsedPage] = []
        for page in document.pages:
            if page.status == PageStatus.FAILED and not page.markdown and not page.blocks:
                continue
            markdown = page.markdown if page.markdown.strip() else "\n\n".join(b.text for b in page.blocks)
            parsed = parse_markdown(markdown, page=page.number)
            parsed.height = page.height or None
            attach_layout(page, parsed, markdown)
            engine_furniture(page, parsed, markdown)
            pages.append(parsed)
        if self.options.furniture_min_pages >= 2:
            mark_furniture(pages, self.options.furniture_min_pages, self.options.furniture_edge_blocks)
            mark_page_numbers(pages)
        if self.options.join_split_sentences:
            join_split_sentences(pages)
        return pages

    def _merge_tables(self, blocks: list[MdBlock], pages: list[ParsedPage]) -> list[MdBlock]:
        """Merge a table that ends its page with a table that starts the next page (same column
        count). Chains over several pages."""
        out: list[MdBlock] = []
        for block in blocks:
            prev = out[-1] if out else None
            if (prev is not None and prev.kind == "table" and block.kind == "table"
                    and block.page == _last_page(prev) + 1):
                first = getattr(prev, "table", None) or parse_table(prev.text, prev.page)
                second = parse_table(block.text, block.page)
                merged = merge_continued(first, second) if first and second else None
                if merged is not None:
                    prev.table = merged  # type: ignore[attr-defined]
                    prev.merged = [*getattr(prev, "merged", []), block]  # type: ignore[attr-defined]
                    continue
            out.append(block)
        return out

    def _title_lines(self, document: Document) -> list[str]:
        """``[title]`` fitted to ``max_title_tokens`` when ``document_title`` is on, else ``[]``."""
        if not self.options.document_title:
            return []
        title = document_title(document)
        return fit_heading_path([title], self.options.max_title_tokens, self.measure.content) if title else []

    def _plan(self, section: Section, block_tokens: dict[int, int], has_children: bool = False,
              title: list[str] | None = None) -> tuple[list[str], int, list[list[Piece]]]:
        """Context lines (document title if any, then the rendered heading path), content budget
        and packed groups of one section."""
        m = self.measure
        rendered = [*(title or []), *fit_heading_path(section.path, self.max_heading_tokens, m.content)]
        overhead = self.counter.count(contextualize(rendered, "")) if rendered else self.specials
        budget = self.max_tokens - overhead
        if budget < 1:
            raise ChunkingError(f"heading path leaves no room under {self.max_tokens} tokens")
        pieces: list[Piece] = []
        blocks = section.blocks
        captions, attached = self._captions(blocks, block_tokens, budget)
        for i, block in enumerate(blocks):
            if i in attached:
                continue  # emitted with the table that follows it
            caption = captions.get(i)
            n = block_tokens.get(id(block))
            if n is None:
                n = m.content(block.text)
            new = block_pieces(block, n, budget, m, caption=caption)
            if not self.options.merge_tables_with_text:
                for p in new:
                    p.solo = p.solo or p.kind in ("table", "formula")
            pieces.extend(new)
        if not pieces and section.heading is not None and not has_children:
            # a heading with neither text nor subsections would be lost: it becomes a chunk
            heading = section.heading
            pieces = block_pieces(heading, m.content(heading.text), budget, m)
        if self.options.merge_small:
            groups = pack(pieces, budget, self.options.overlap_tokens, self.join_tokens)
        else:  # only the pieces of one block (sentences, items, rows) are packed together
            groups = []
            for _, run in itertools.groupby(pieces, key=lambda p: id(p.block) if p.block is not None else id(p)):
                groups += pack(list(run), budget, self.options.overlap_tokens, self.join_tokens)
        return rendered, budget, groups

    def _captions(self, blocks: list[MdBlock], block_tokens: dict[int, int],
                  budget: int) -> tuple[dict[int, MdBlock], set[int]]:
        """The caption of each table of a section (``{table's index: caption block}``) and the
        indices of the blocks that became captions (they are emitted with their table only).

        A block of kind ``caption`` right before a table is its caption (``attach_captions``) when it
        takes at most a quarter of the budget. Without one, ``table_lead_in`` looks for the table's
        *lead-in*: the one or two paragraphs right before it on the same page, each a single line
        that does not end a sentence (a title, a "Year Ended December 31," or a "the following table
        shows:"; a line ending in ``.``, ``!`` or ``?`` is body text), together at most
        ``max_lead_in_tokens``. Text-layer and OCR engines give a financial
        statement's title ("AMAZON.COM, INC. CONSOLIDATED STATEMENTS OF OPERATIONS (in millions)")
        and its column context ("Year Ended December 31,") as plain paragraphs above the table; as
        the caption they head every part of a split table, so each part's embedded text says
        which statement its rows belong to (measured with ``tests/benchmarks/bench_retrieval.py``;
        figures in the README). Two lead-in paragraphs are joined into one caption block spanning
        both (the source text between them is a blank line)."""
        captions: dict[int, MdBlock] = {}
        attached: set[int] = set()
        opts = self.options

        def tokens(b: MdBlock) -> int:
            n = block_tokens.get(id(b))
            return self.measure.content(b.text) if n is None else n

        for i, block in enumerate(blocks):
            if block.kind != "table" or i == 0:
                continue
            before = blocks[i - 1]
            if opts.attach_captions and before.kind == "caption" and i - 1 not in attached \
                    and tokens(before) <= budget // 4:
                captions[i] = before
                attached.add(i - 1)
                continue
            if not opts.table_lead_in:
                continue
            lead: list[int] = []
            room = min(opts.max_lead_in_tokens, budget // 4)
            for j in (i - 1, i - 2):
                if j < 0 or j in attached or (lead and j != lead[-1] - 1):
                    break
                b = blocks[j]
                line = b.text.strip()
                if (b.kind != "paragraph" or b.page != block.page or "\n" in line or line.endswith((".", "!", "?"))
                        or tokens(b) > room):
                    break
                room -= tokens(b)
                lead.append(j)
            if not lead:
                continue
            parts = [blocks[j] for j in sorted(lead)]
            if len(parts) == 1:
                cap = parts[0]
            else:
                cap = MdBlock(kind="caption", text="\n\n".join(b.text for b in parts), start=parts[0].start,
                              end=parts[-1].end, page=parts[0].page, bboxes=[bb for b in parts for bb in b.bboxes])
            captions[i] = cap
            attached.update(lead)
        return captions, attached

    def _embed(self, rendered: list[str], group: list[Piece]) -> str:
        """The embedded text of a group: ``contextualize(rendered, text)``, its tables in their
        compact form when ``table_embed`` is ``"rows"``; for a group holding a formula larger than
        the limit, the longest prefix of that text that fits (binary search)."""
        text = join_pieces(group)
        if self.options.table_embed == "rows":
            text = compact_tables(text)
        full = contextualize(rendered, text)
        if not any(p.truncate for p in group) or self.counter.count(full) <= self.max_tokens:
            return full
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.counter.count(contextualize(rendered, text[:mid])) <= self.max_tokens:
                lo = mid
            else:
                hi = mid - 1
        return contextualize(rendered, text[:lo])

    def _make_chunk(self, document: Document, index: int, section: Section, rendered: list[str],
                    group: list[Piece], embed: str, n: int, furniture: dict[int, dict[str, list[str]]],
                    title_lines: int = 0, role: str | None = None, heading_page: int | None = None) -> Chunk:
        """The chunk of ``group``; ``embed``: its embedded text (:meth:`_embed`), ``n``: its tokens;
        ``role``: its section's role (:mod:`folioflow.chunking.roles`), kept as ``metadata["role"]``;
        ``heading_page``: for the first chunk under a heading, the page of that heading (or of the
        first heading since the previous chunk): the span starts there when it is earlier."""
        text = join_pieces(group)
        kinds = {p.kind for p in group}
        kind = ChunkKind(kinds.pop()) if len(kinds) == 1 else ChunkKind.MIXED
        page_start = min(p.pages[0] for p in group)
        if heading_page is not None:
            page_start = min(page_start, heading_page)
        page_end = max(p.pages[1] for p in group)
        boxes: list[PageBBox] = []
        for p in group:
            for b in p.bboxes:
                if b not in boxes:
                    boxes.append(b)
        meta: dict[str, Any] = {}
        for p in group:
            for key, value in p.meta.items():
                meta.setdefault(key, value)
        if role:
            meta[ROLE] = role
        if title_lines:
            meta["document_title"] = rendered[0]
        if rendered[title_lines:] != section.path:
            meta["heading_path_rendered"] = rendered[title_lines:]
        if any(p.truncate for p in group):
            meta["embed_truncated"] = True
        overlap = sum(p.tokens for p in group if p.overlap)
        if overlap:
            meta["overlap_tokens"] = overlap
        headers = [t for pg in range(page_start, page_end + 1) for t in furniture.get(pg, {}).get("header", [])]
        footers = [t for pg in range(page_start, page_end + 1) for t in furniture.get(pg, {}).get("footer", [])]
        if headers:
            meta["page_headers"] = list(dict.fromkeys(headers))
        if footers:
            meta["page_footers"] = list(dict.fromkeys(footers))
        return Chunk(doc_id=document.doc_id, index=index, kind=kind, text=text, embed_text=embed,
                     heading_path=list(section.path), page_start=page_start, page_end=page_end, bboxes=boxes,
                     token_count=n, content_hash=sha256_text(embed), metadata=meta)

    @staticmethod
    def _number_parts(chunks: list[Chunk]) -> None:
        """``part = (i, n)`` for the chunks of each split table (in order)."""
        by_table: dict[int, list[Chunk]] = {}
        for chunk in chunks:
            table_id = chunk.metadata.pop("table_id", None)
            if table_id is not None:
                by_table.setdefault(table_id, []).append(chunk)
        for parts in by_table.values():
            for i, chunk in enumerate(parts, 1):
                chunk.part = (i, len(parts))


def keep_bodiless_furniture(chunks: list[Chunk], furniture: dict[int, dict[str, list[str]]]) -> list[int]:
    """Give the furniture of pages that no chunk covers to a neighbouring chunk (in place).

    A page whose only text is furniture (a blank page printed with its page number, a divider page
    holding a running header) is in no chunk's page span, so its headers and footers would reach no
    chunk's metadata and neither the sparse index nor a reader could find them. Each such page's
    furniture joins the ``page_headers`` / ``page_footers`` of the last chunk ending before it (the
    first chunk after it when none does), and the page number joins that chunk's
    ``metadata["furniture_pages"]`` (sorted ints): the pages outside its span whose furniture it
    carries. The chunk's text, span and embedding are unchanged. Returns the pages handled."""
    if not chunks:
        return []
    covered = {n for c in chunks for n in range(c.page_start, c.page_end + 1)}
    handled = []
    for page in sorted(set(furniture) - covered):
        before = [c for c in chunks if c.page_end < page]
        chunk = before[-1] if before else next(c for c in chunks if c.page_start > page)
        for side, key in (("header", "page_headers"), ("footer", "page_footers")):
            texts = furniture[page].get(side, [])
            if texts:
                chunk.metadata[key] = list(dict.fromkeys([*chunk.metadata.get(key, []), *texts]))
        chunk.metadata["furniture_pages"] = sorted({*chunk.metadata.get("furniture_pages", []), page})
        handled.append(page)
    return handled


def _has_children(section: Section, nxt: Section | None) -> bool:
    """Whether the next section is nested under ``section``."""
    return nxt is not None and len(nxt.path) > len(section.path) and nxt.path[:len(section.path)] == section.path


def _last_page(block: MdBlock) -> int:
    merged = getattr(block, "merged", [])
    return merged[-1].page if merged else block.page
