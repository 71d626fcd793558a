"""Input discovery: files, folders, globs, duplicates and missing paths."""

from __future__ import annotations

from pathlib import Path

from folioflow.flows.sources import discover
from folioflow.ocr.ids import doc_id_for


def tree(root: Path) -> Path:
    for rel in ("a.pdf", "b/c.PDF", "b/d/e.png", "b/notes.txt", "b/.hidden/x.pdf", "scan.TIFF", "img.jpeg"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"%PDF-1.4\n")
    return root


def test_folder_is_walked_recursively_with_supported_suffixes_only(tmp_path):
    root = tree(tmp_path / "in")
    found = discover([str(root)])
    assert [f.path for f in found.files] == ["a.pdf", "b/c.PDF", "b/d/e.png", "img.jpeg", "scan.TIFF"]
    assert found.errors == [] and found.roots == [root.resolve().as_uri()]
    first = found.files[0]
    assert first.local_path == (root / "a.pdf").resolve() and first.uri == first.local_path.as_uri()
    assert first.doc_id == doc_id_for(first.local_path) and first.read_bytes() == b"%PDF-1.4\n"


def test_explicit_files_are_taken_whatever_their_suffix(tmp_path):
    root = tree(tmp_path / "in")
    found = discover([str(root / "b/notes.txt")])
    assert [f.path for f in found.files] == ["notes.txt"]


def test_globs_duplicates_and_missing_paths(tmp_path):
    root = tree(tmp_path / "in")
    found = discover([str(root / "b" / "**" / "*.*"), str(root), str(root / "nope.pdf"), str(root / "*.docx")])
    paths = [f.path for f in found.files]
    assert paths[:2] == ["c.PDF", "d/e.png"]  # relative to the glob's fixed prefix, notes.txt filtered
    assert paths[2:] == ["a.pdf", "img.jpeg", "scan.TIFF"]  # the folder adds only files not seen yet
    assert [(e.argument, e.error.split(":")[0]) for e in found.errors] == [
        (str(root / "nope.pdf"), "not found"), (str(root / "*.docx"), "no supported file matches '" + str(root / "*.docx") + "'")]


def test_a_name_with_spaces_and_accents_gets_the_id_of_its_path(tmp_path):
    """The id computed while listing (from the file's URI, percent-encoded) equals the id of the
    path as a user types it (``folioflow show PATH``): the URI is decoded once, not encoded twice."""
    path = tmp_path / "Q3 2024" / "Side Letter – Fonds Zürich.pdf"
    path.parent.mkdir()
    path.write_bytes(b"%PDF-1.4\n")
    found = discover([str(tmp_path)])
    assert [f.path for f in found.files] == ["Q3 2024/Side Letter – Fonds Zürich.pdf"]
    listed = found.files[0]
    assert "%20" in listed.uri and "%2520" not in listed.uri
    assert listed.doc_id == doc_id_for(path) == doc_id_for(listed.uri)


def test_a_link_to_nothing_inside_a_folder_is_reported_not_skipped(tmp_path):
    """A trial found a dangling symlink inside a folder skipped silently (given by name, it was
    reported "not found"); a document that cannot be read is said, never dropped without a word."""
    root = tree(tmp_path / "in")
    (root / "gone.pdf").symlink_to(root / "moved-away.pdf")
    (root / "notes-link.txt").symlink_to(tmp_path / "nowhere.txt")  # not a document's suffix: still left out
    found = discover([str(root)])
    assert [f.path for f in found.files] == ["a.pdf", "b/c.PDF", "b/d/e.png", "img.jpeg", "scan.TIFF"]
    assert [(e.argument, e.error.split(":")[0]) for e in found.errors] == [(str(root / "gone.pdf"), "cannot read " + str(root / "gone.pdf"))]


def test_a_link_to_itself_inside_a_folder_is_reported_and_the_rest_found(tmp_path):
    """A breaking trial: a self-referencing link (``loopy.pdf -> loopy.pdf``) made ``discover`` raise
    ``RuntimeError: Symlink loop`` out of ``Path.resolve``, which aborted a whole ingest or watch run."""
    root = tree(tmp_path / "in")
    (root / "loopy.pdf").symlink_to("loopy.pdf")
    found = discover([str(root)])
    assert [f.path for f in found.files] == ["a.pdf", "b/c.PDF", "b/d/e.png", "img.jpeg", "scan.TIFF"]
    [problem] = found.errors
    assert problem.argument == str(root / "loopy.pdf") and "loop" in problem.error.lower(), problem
