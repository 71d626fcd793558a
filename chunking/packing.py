"""Packing pieces of one section into chunks that fit the limit exactly.

1. Greedy: consecutive pieces are put together while the estimate (content tokens of the pieces,
   which sentence-, row- and item-level pieces each were counted for once, in batches) fits the
   section's budget. Solo pieces (table parts, truncated formulas) stand alone. With
   ``overlap_tokens`` > 0, a chunk that follows a text chunk of the same section starts with that
   chunk's trailing text pieces up to that many tokens (marked ``overlap``).
2. Exact check: each chunk's embedded text (heading path + text) is counted once with the model's
   tokenizer. Token counts are additive for WordPiece at whitespace joins, so the estimate is
   normally exact; for tokenizers where it is not (BPE merges across a join), a chunk over the
   limit is repaired: its last piece moves to a chunk of its own, and a single piece still over is
   re-split with the budget reduced by the overflow. A chunk that cannot be brought under the
   limit raises :class:`ChunkingError` (it cannot happen with a budget of at least one token).

This is O(pieces) tokenizer work: nothing is re-tokenized while packing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from folioflow.chunking.pieces import Piece
from folioflow.ocr.errors import ChunkingError

__all__ = ["join_pieces", "pack", "repair"]


def pack(pieces: list[Piece], budget: int, overlap_tokens: int = 0, join_tokens: int = 0) -> list[list[Piece]]:
    """Greedy groups of pieces, each estimated within ``budget`` content tokens; ``join_tokens``:
    what the blank line between two pieces costs (0 for WordPiece, 1-2 for byte-level BPE)."""
    groups: list[list[Piece]] = []
    current: list[Piece] = []
    used = 0
    for piece in pieces:
        if piece.solo:
            if current:
                groups.append(current)
            groups.append([piece])
            current, used = [], 0
            continue
        if current and used + join_tokens + piece.tokens > budget:
            groups.append(current)
            current, used = _overlap(current, piece, budget, overlap_tokens)
        used += piece.tokens + (join_tokens if current else 0)
        current.append(piece)
    if current:
        groups.append(current)
    return groups


def _overlap(previous: list[Piece], nxt: Piece, budget: int, overlap_tokens: int) -> tuple[list[Piece], int]:
    if overlap_tokens <= 0 or nxt.kind != "text":
        return [], 0
    seed: list[Piece] = []
    used = 0
    for piece in reversed(previous):
        if piece.kind != "text" or piece.overlap:
            break
        if used + piece.tokens > overlap_tokens or used + piece.tokens + nxt.tokens > budget:
            break
        seed.insert(0, piece)
        used += piece.tokens
    if len(seed) == len(previous):  # never repeat a whole chunk
        return [], 0
    return [_as_overlap(p) for p in seed], used


def _as_overlap(piece: Piece) -> Piece:
    clone = Piece(**piece.__dict__)
    clone.overlap = True
    return clone


def join_pieces(pieces: list[Piece]) -> str:
    """The exact Markdown of consecutive pieces: pieces of one block that touch or follow each
    other are one slice of the block's text; different blocks are separated by a blank line."""
    out: list[str] = []
    prev: Piece | None = None
    run_start = 0
    for piece in pieces:
        if (prev is not None and piece.block is not None and piece.block is prev.block and piece.span and prev.span
                and prev.span[1] <= piece.span[0]):
            out[-1] = piece.block.text[run_start:piece.span[1]].strip()
        else:
            if piece.block is not None and piece.span:
                run_start = piece.span[0]
                out.append(piece.block.text[piece.span[0]:piece.span[1]].strip())
            else:
                out.append(piece.text.strip())
        prev = piece
    return "\n\n".join(t for t in out if t)


def repair(groups: list[list[Piece]], measure: Callable[[list[Piece]], int], max_tokens: int,
           budget: int, counts: list[int] | None = None) -> list[tuple[list[Piece], int]]:
    """Exact check of every group (``measure`` returns the embedded text's token count; ``counts``,
    when given, are those counts already measured in one batch) and the repair described in the
    module docstring. Returns (group, token count) pairs, all within ``max_tokens``."""
    out: list[tuple[list[Piece], int]] = []
    known_counts: list[int] | list[None] = counts or [None] * len(groups)
    queue: deque[tuple[list[Piece], int | None]] = deque(zip(groups, known_counts, strict=True))
    while queue:
        group, known = queue.popleft()
        n = measure(group) if known is None else known
        if n <= max_tokens:
            out.append((group, n))
            continue
        overflow = n - max_tokens
        if len(group) > 1:
            keep = group[:-1]
            last = group[-1]
            if last.overlap:  # dropping an overlap copy loses nothing
                queue.appendleft((keep, None))
                continue
            queue.appendleft(([last], None))
            queue.appendleft((keep, None))
            continue
        piece = group[0]
        smaller = min(budget, piece.tokens) - overflow
        if piece.resplit is None or smaller < 1:
            raise ChunkingError(f"chunk of {n} tokens cannot be brought under the limit of {max_tokens}")
        parts = piece.resplit(smaller)
        if not parts or (len(parts) == 1 and parts[0].tokens >= piece.tokens and parts[0].text == piece.text):
            raise ChunkingError(f"chunk of {n} tokens cannot be split under the limit of {max_tokens}")
        for part in parts:
            if piece.solo:
                part.solo = True
                part.meta = {**piece.meta, **part.meta}
        for part in reversed(parts):
            queue.appendleft(([part], None))
    return out
