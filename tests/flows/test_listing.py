"""Configured sources: local folders and globs, memory://, a real HTTP server and S3 (moto's
server through s3fs); include/exclude, change tokens, and no escape from the root."""

from __future__ import annotations

import os
from pathlib import Path

import fsspec
import pytest

from folioflow.flows.listing import list_source
from folioflow.flows.settings import load_settings
from folioflow.flows.source_config import SourceConfig
from folioflow.ocr.errors import ConfigurationError
from folioflow.ocr.ids import doc_id_for


def _tree(root: Path) -> Path:
    for rel in ("a.pdf", "sub/b.PDF", "sub/drafts/c.pdf", "notes.txt", ".hidden/x.pdf", "img.png"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"%PDF-1.4 " + rel.encode())
    return root


def test_local_include_exclude_and_metadata(tmp_path):
    root = _tree(tmp_path / "src")
    config = SourceConfig(name="kb", url=str(root), tenant="acme", metadata={"team": "legal"},
                          include=["**/*.pdf"], exclude=["**/drafts/**"])
    listing = list_source(config)
    assert [f.path for f in listing.files] == ["a.pdf", "sub/b.PDF"]
    assert listing.complete and listing.errors == []
    first = listing.files[0]
    assert (first.source_name, first.tenant, first.metadata) == ("kb", "acme", {"team": "legal"})
    assert first.doc_id == doc_id_for(root / "a.pdf") and first.read_bytes() == b"%PDF-1.4 a.pdf"
    assert first.change_token == f"stat:{first.size}:{first.mtime}"
    assert [f.path for f in list_source(config.model_copy(update={"recursive": False})).files] == ["a.pdf"]


def test_local_glob_source(tmp_path):
    root = _tree(tmp_path / "src")
    listing = list_source(SourceConfig(name="g", url=str(root / "sub" / "**" / "*")))
    assert sorted(f.path for f in listing.files) == ["b.PDF", "drafts/c.pdf"]


def test_symlinks_cannot_escape_the_root(tmp_path):
    root = _tree(tmp_path / "src")
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "payroll.pdf").write_bytes(b"%PDF-1.4 secret")
    os.symlink(outside / "payroll.pdf", root / "link.pdf")  # file link leaving the root
    os.symlink(outside, root / "linked-dir")  # folder link: never followed
    os.symlink(root / "a.pdf", root / "inside.pdf")  # a link inside the root is fine
    listing = list_source(SourceConfig(name="kb", url=str(root)))
    paths = [f.path for f in listing.files]
    assert "link.pdf" not in paths and not any(p.startswith("linked-dir") for p in paths)
    assert "inside.pdf" in paths
    assert [e.error.split(":")[0] for e in listing.errors] == ["escapes its root"]
    assert listing.complete  # a refused file does not make the listing incomplete


def test_a_link_to_itself_is_reported_and_the_rest_listed(tmp_path):
    """A breaking trial: a self-referencing link made every run of a watched folder fail
    (``RuntimeError: Symlink loop`` out of ``Path.resolve``)."""
    root = _tree(tmp_path / "src")
    os.symlink("loopy.pdf", root / "loopy.pdf")
    listing = list_source(SourceConfig(name="kb", url=str(root)))
    assert sorted(f.path for f in listing.files) == ["a.pdf", "img.png", "sub/b.PDF", "sub/drafts/c.pdf"]
    [problem] = listing.errors
    assert problem.argument == "loopy.pdf" and "loop" in problem.error.lower(), problem


def test_patterns_and_names_are_validated():
    with pytest.raises(ValueError, match="relative"):
        SourceConfig(name="x", url="/data", include=["../**/*.pdf"])
    with pytest.raises(ValueError, match="source name"):
        SourceConfig(name="bad name!", url="/data")


def test_missing_root_is_incomplete(tmp_path):
    listing = list_source(SourceConfig(name="gone", url=str(tmp_path / "nope")))
    assert not listing.complete and "not found" in listing.errors[0].error


def test_config_file_sources_and_secret_passwords(tmp_path, monkeypatch):
    monkeypatch.setenv("NDA_PASSWORD", "open-sesame")
    config = tmp_path / "folioflow.yaml"
    config.write_text(f"""
sources:
  - name: contracts
    url: {tmp_path}
    tenant: acme
    passwords: {{"nda-*.pdf": "${{NDA_PASSWORD}}"}}
    storage_options: {{key: "super-secret-key"}}
""")
    settings = load_settings(config)
    source = settings.source("contracts")
    assert source.password_for("deals/nda-2024.pdf") == "open-sesame"
    assert source.password_for("other.pdf") is None
    assert source.fs_options() == {"key": "super-secret-key"}
    for text in (repr(settings), settings.model_dump_json(), str(settings.model_dump()), repr(source)):
        assert "super-secret-key" not in text and "open-sesame" not in text
    with pytest.raises(ConfigurationError, match="no source named 'x'"):
        settings.source("x")
    dup = tmp_path / "dup.yaml"
    dup.write_text(f"sources: [{{name: a, url: {tmp_path}}}, {{name: a, url: {tmp_path}}}]\n")
    with pytest.raises(ConfigurationError, match="unique"):
        load_settings(dup)


def test_memory_store_change_tokens():
    fs = fsspec.filesystem("memory")
    fs.pipe("/kb-test/docs/a.pdf", b"%PDF-1.4 one")
    fs.pipe("/kb-test/docs/deep/b.pdf", b"%PDF-1.4 two")
    fs.pipe("/kb-test/docs/skip.txt", b"text")
    config = SourceConfig(name="mem", url="memory:///kb-test/docs")
    listing = list_source(config)
    assert [f.path for f in listing.files] == ["a.pdf", "deep/b.pdf"]
    first = listing.files[0]
    assert first.uri == "memory:///kb-test/docs/a.pdf" and first.local_path is None
    assert first.read_bytes() == b"%PDF-1.4 one" and first.size == 12
    token = first.change_token
    fs.pipe("/kb-test/docs/a.pdf", b"%PDF-1.4 one, longer")
    assert list_source(config).files[0].change_token != token


def test_http_source(http_server):
    root, base = http_server
    _tree(root / "kb")
    config = SourceConfig(name="web", url=f"{base}/kb/", exclude=["**/drafts/**"])
    listing = list_source(config)
    assert [f.path for f in listing.files] == ["a.pdf", "img.png", "sub/b.PDF"]
    first = listing.files[0]
    assert first.uri == f"{base}/kb/a.pdf" and first.size == len(b"%PDF-1.4 a.pdf")
    assert first.mtime is not None and first.read_bytes() == b"%PDF-1.4 a.pdf"
    # http.server lists parent links too; nothing outside the root is ever taken.
    assert all(f.uri.startswith(f"{base}/kb/") for f in listing.files)


def test_s3_source_through_s3fs(s3_endpoint):
    options = {"endpoint_url": s3_endpoint}
    fs = fsspec.filesystem("s3", **options)
    fs.mkdir("kb-listing")
    fs.pipe("kb-listing/contracts/a.pdf", b"%PDF-1.4 a")
    fs.pipe("kb-listing/contracts/sub/b.pdf", b"%PDF-1.4 b")
    fs.pipe("kb-listing/other/c.pdf", b"%PDF-1.4 c")
    config = SourceConfig(name="s3", url="s3://kb-listing/contracts", storage_options=options)
    listing = list_source(config)
    assert [f.uri for f in listing.files] == ["s3://kb-listing/contracts/a.pdf", "s3://kb-listing/contracts/sub/b.pdf"]
    first = listing.files[0]
    assert first.etag and first.change_token == f"etag:{first.etag}"
    assert first.read_bytes() == b"%PDF-1.4 a"
    fs.pipe("kb-listing/contracts/a.pdf", b"%PDF-1.4 a changed")
    assert list_source(config).files[0].change_token != first.change_token
    bad = list_source(SourceConfig(name="s3x", url="s3://no-such-bucket-here/x", storage_options=options))
    assert not bad.complete and "cannot list" in bad.errors[0].error
