"""Security: no escape from a source's root, no URL from inside a document is ever fetched.

URLs are checked against a real HTTP server on loopback that counts every request it receives:
a PDF names it in a link annotation (``/URI`` action), in its text and in Markdown image syntax
that an HTML export would turn into ``<img src>``. Converting, exporting and ingesting the PDF
must leave the server's count at zero, and the exported HTML must hold no URL a browser would
load by itself.
"""

from __future__ import annotations

import http.server
import os
import re
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from folioflow.flows.cli import app
from folioflow.flows.reliability.hostile import raw_pdf, text_page
from folioflow.flows.sources import discover
from folioflow.ocr.export import document_html
from folioflow.ocr.samples import write_sample_pdf
from folioflow.ocr.schema import Document, Page, SourceRef


# ----------------------------------------------------------------------------------- source roots
@pytest.fixture
def tree(tmp_path) -> Path:
    """source/ holds report.pdf, a symlink to a PDF outside, a symlinked folder leading outside and
    a nested folder; outside/ holds the files a source must never reach."""
    outside = tmp_path / "outside"
    outside.mkdir()
    write_sample_pdf(outside / "private.pdf")
    (outside / "sub").mkdir()
    write_sample_pdf(outside / "sub" / "other.pdf")
    source = tmp_path / "source"
    (source / "nested").mkdir(parents=True)
    write_sample_pdf(source / "report.pdf")
    write_sample_pdf(source / "nested" / "inner.pdf")
    os.symlink(outside / "private.pdf", source / "leak.pdf")
    os.symlink(outside / "sub", source / "linked-folder")
    os.symlink(source / "report.pdf", source / "nested" / "alias.pdf")  # inside the root: allowed
    return source


def test_folder_source_never_reaches_outside_its_root(tree):
    found = discover([str(tree)])
    assert sorted(f.local_path.name for f in found.files) == ["inner.pdf", "report.pdf"]  # the alias is report.pdf
    assert all(f.local_path.is_relative_to(tree.resolve()) for f in found.files)
    (problem,) = found.errors
    assert problem.error.startswith("escapes its root: ") and "leak.pdf" in problem.error


def test_glob_source_never_reaches_outside_its_prefix(tree):
    found = discover([str(tree / "**" / "*.pdf")])
    assert all(f.local_path.is_relative_to(tree.resolve()) for f in found.files)
    assert any("leak.pdf" in p.error and p.error.startswith("escapes its root") for p in found.errors)
    assert not any("private" in str(f.local_path) or "other.pdf" in str(f.local_path) for f in found.files)


def test_dotdot_argument_is_resolved_before_the_fence(tree):
    """``source/nested/..`` is the source folder itself: the same files, the same refusal."""
    found = discover([str(tree / "nested" / "..")])
    assert sorted(f.local_path.name for f in found.files) == ["inner.pdf", "report.pdf"]
    assert [p.error.split(":")[0] for p in found.errors] == ["escapes its root"]


# ----------------------------------------------------------------------------------- URLs
class _Counter(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's naming
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    do_HEAD = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture
def canary():
    """A loopback HTTP server; yields (base URL, list of requested paths)."""
    _Counter.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Counter.hits
    server.shutdown()
    server.server_close()


def test_exported_html_loads_nothing_remote():
    markdown = ('![pixel](https://tracker.example/p.png) <img src="//cdn.example/x.png"> '
                '<img src="data:image/png;base64,AAAA"> [terms](https://example.com/terms) ![fig](figures/a.png)')
    doc = Document(doc_id="d", content_hash="h", source=SourceRef(uri="file:///d.pdf", path="d.pdf"),
                   mime_type="application/pdf", page_count=1, pages=[Page(number=1, width=612, height=792, markdown=markdown)])
    html = document_html(doc)
    sources = re.findall(r'\bsrc="([^"]*)"', html)
    assert sources == ["figures/a.png"]  # only the relative figure link survives
    assert 'href="https://example.com/terms"' in html  # a link is followed only when clicked
    assert "Content-Security-Policy" in html and "default-src 'none'" in html


@pytest.mark.slow
def test_urls_inside_a_document_are_never_fetched(canary, tmp_path, prefect_harness):
    base, hits = canary
    folder = tmp_path / "docs"
    pdf = raw_pdf(folder / "linked.pdf", [text_page("Linked Memo", f"See the chart at {base}/text-url.png for details.",
                                                   f"![chart]({base}/markdown-image.png)",
                                                   "The memo closes with this plain sentence.")],
                  uri=f"{base}/annotation")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["convert", str(pdf), "-o", str(out), "--format", "markdown,html,json",
                                      "--include-images"])
    assert result.exit_code == 0, result.output
    html = (out / "linked.html").read_text()
    assert base in (out / "linked.md").read_text()  # the URL is kept as text ...
    assert not [s for s in re.findall(r'\bsrc="([^"]*)"', html) if "://" in s or s.startswith("//")]  # ... never as a load

    from folioflow.flows.ingest import run_ingest
    from folioflow.flows.settings import load_settings

    report = run_ingest([str(folder)], load_settings(data_dir=tmp_path / "data", workers=1))
    assert [d.status for d in report.documents] == ["indexed"]
    assert hits == []  # nothing in folioflow contacted the server named inside the document
