"""The CLI as a user runs it: `folioflow ingest` in Prefect's ephemeral mode (no server started by
the test), then `query --json`, `status --json` and `show`, in fresh processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from folioflow.flows.cli.query_view import QUERY_KEYS
from folioflow.ocr.samples import SAMPLE_FACTS, write_sample_pdf

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def folioflow(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    # the caller's PYTHONPATH after the root: a worktree's package farm (devenv.sh) then stays in force
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "PREFECT_HOME": str(home)}
    env.pop("PREFECT_API_URL", None)  # ephemeral mode, as on a fresh machine
    return subprocess.run([sys.executable, "-m", "folioflow.flows.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900, stdin=subprocess.DEVNULL)


def test_ingest_query_status_show(tmp_path):
    pdf = write_sample_pdf(tmp_path / "sample.pdf")
    (tmp_path / "notes.pdf").write_text("plain text saved with a .pdf name")
    home = tmp_path / "prefect-home"

    run = folioflow("ingest", str(pdf), str(tmp_path / "notes.pdf"), "--report", "report.json", "--no-progress",
                    cwd=tmp_path, home=home)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "pages per second" in run.stdout and "Failures" in run.stdout
    records = {Path(r["source"]).name: r for r in json.loads((tmp_path / "report.json").read_text())}
    assert records["sample.pdf"]["status"] == "indexed"
    assert records["sample.pdf"]["engines"] == ["text", "text"]
    assert records["notes.pdf"]["status"] == "failed"
    assert records["notes.pdf"]["error"].startswith("not a PDF")
    assert (tmp_path / ".folioflow").is_dir()  # default data dir in the working directory

    query = folioflow("query", "What was the Sharpe ratio of the flagship fund?", "-k", "3", "--json",
                      "--all-chunks", cwd=tmp_path, home=home)
    assert query.returncode == 0, query.stderr[-3000:]
    hits = json.loads(query.stdout)
    assert len(hits) == 3 and all(set(QUERY_KEYS) <= set(hit) for hit in hits)
    assert SAMPLE_FACTS["sharpe"] in hits[0]["text"] and hits[0]["page_start"] == 2
    assert hits[0]["heading_path"] == ["2 Risk-Adjusted Return"]

    per_page = json.loads(folioflow("query", "fund", "-k", "5", "--json", cwd=tmp_path, home=home).stdout)
    distinct = [hit for hit in per_page if not hit["page_repeat"]]
    assert sorted(hit["page_start"] for hit in distinct) == [1, 2]  # by default one chunk per page: two pages
    assert per_page[:2] == distinct and len(per_page) == 5  # then further chunks of those pages, up to k
    assert {hit["source"] for hit in per_page} == {"default"} and per_page[0]["uri"].endswith("sample.pdf")
    printed = folioflow("query", "fund", "-k", "5", cwd=tmp_path, home=home).stdout
    assert " ".join(printed.split()).count("another chunk of a page above") == 3, printed  # marked in print too

    plain = folioflow("query", "fund", "-k", "5", "--json", "--glossary", "none", cwd=tmp_path, home=home)
    assert plain.returncode == 0 and len(json.loads(plain.stdout)) == 5
    bad = folioflow("query", "fund", "--glossary", str(tmp_path / "no-such-glossary.yaml"), cwd=tmp_path, home=home)
    assert bad.returncode != 0 and "cannot read glossary" in bad.stderr

    by_path = folioflow("query", "fund", "-k", "2", "--json", "--doc", str(pdf.resolve()), cwd=tmp_path, home=home)
    assert by_path.returncode == 0, by_path.stderr[-3000:]  # --doc takes the absolute path it was ingested from
    assert {hit["doc_id"] for hit in json.loads(by_path.stdout)} == {records["sample.pdf"]["doc_id"]}

    status = folioflow("status", "--json", cwd=tmp_path, home=home)
    summary = json.loads(status.stdout)
    assert summary["profile"] == "general"  # sample.pdf names neither a contract nor a filing
    assert summary["documents"] == 1 and summary["chunks"] == records["sample.pdf"]["chunks"]

    show = folioflow("show", str(pdf), "--page", "1", cwd=tmp_path, home=home)
    assert show.returncode == 0 and "<!-- page 1 -->" in show.stdout and "| Advisory fees |" in show.stdout

    # the chunks as the index holds them: all of them in reading order, each with its heading path
    listed = folioflow("show", "sample.pdf", "--chunks", "--format", "json", cwd=tmp_path, home=home)
    assert listed.returncode == 0, listed.stderr[-3000:]
    rows = json.loads(listed.stdout)
    assert [r["index"] for r in rows] == list(range(records["sample.pdf"]["chunks"]))
    assert all(r["token_count"] > 0 and r["page_start"] <= r["page_end"] for r in rows)
    sharpe = [r for r in rows if SAMPLE_FACTS["sharpe"] in r["text"]]
    assert len(sharpe) == 1 and sharpe[0]["heading_path"] == ["2 Risk-Adjusted Return"] and sharpe[0]["page_start"] == 2
    page2 = json.loads(folioflow("show", "sample.pdf", "--chunks", "--format", "json", "--page", "2",
                                 cwd=tmp_path, home=home).stdout)
    assert page2 == [r for r in rows if r["page_start"] <= 2 <= r["page_end"]] and sharpe[0] in page2
    text = folioflow("show", "sample.pdf", "--chunks", cwd=tmp_path, home=home).stdout
    assert text.count("<!-- chunk ") == len(rows) and "tokens · 2 Risk-Adjusted Return -->" in text
    outside = folioflow("show", "sample.pdf", "--chunks", "--page", "9", cwd=tmp_path, home=home)
    assert outside.returncode == 1 and "page 9 outside 1..2" in outside.stderr

    again = folioflow("ingest", str(pdf), "--report", "again.json", "--no-progress", cwd=tmp_path, home=home)
    assert again.returncode == 0
    assert json.loads((tmp_path / "again.json").read_text())[0]["status"] == "skipped"


#: ``python -c`` running the CLI, then saying on stderr whether sentence-transformers (what loads
#: the embedding model: indexing/embedder.py) was imported in the process.
PROBE = ("import atexit, runpy, sys; atexit.register(lambda: print('sentence_transformers imported:', "
         "'sentence_transformers' in sys.modules, file=sys.stderr)); sys.argv = ['folioflow', *sys.argv[1:]]; "
         "runpy.run_module('folioflow.flows.cli', run_name='__main__')")


def test_ingest_whose_every_input_is_refused_never_loads_the_model(tmp_path):
    """A user's trial: an ingest of inputs all refused before a page is converted (text named
    .pdf, an empty file, a ZIP named .pdf) loaded the embedding model, though nothing would be
    embedded. The run's fingerprint takes the model's name from the settings; the model loads for
    the first document that has pages to convert, and that document is indexed under the same
    fingerprint as before."""
    from folioflow.flows.settings import load_settings
    from folioflow.flows.stages import chunker_options, index_fingerprint, ocr_identity
    from folioflow.indexing.embedder import canonical_model_name
    from folioflow.indexing.store import open_store

    (tmp_path / "notes.pdf").write_text("plain text saved with a .pdf name")
    (tmp_path / "empty.pdf").write_bytes(b"")
    (tmp_path / "archive.pdf").write_bytes(b"PK\x03\x04 this is a zip archive, not a PDF")
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "PREFECT_HOME": str(tmp_path / "prefect-home")}
    env.pop("PREFECT_API_URL", None)

    def ingest(*names: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", PROBE, "ingest", *names, "--report", "report.json", "--no-progress"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)

    refused = ingest("notes.pdf", "empty.pdf", "archive.pdf")
    assert refused.returncode == 0, refused.stderr[-3000:]
    records = json.loads((tmp_path / "report.json").read_text())
    assert [r["status"] for r in records] == ["failed"] * 3 and all(r["error"] for r in records), records
    assert "sentence_transformers imported: False" in refused.stderr, refused.stderr[-3000:]

    pdf = write_sample_pdf(tmp_path / "sample.pdf")
    indexed = ingest(str(pdf), "notes.pdf")
    assert indexed.returncode == 0, indexed.stderr[-3000:]
    assert "sentence_transformers imported: True" in indexed.stderr, indexed.stderr[-3000:]
    statuses = {Path(r["source"]).name: r["status"] for r in json.loads((tmp_path / "report.json").read_text())}
    assert statuses == {"sample.pdf": "indexed", "notes.pdf": "failed"}
    settings = load_settings(data_dir=tmp_path / ".folioflow")
    store = open_store(settings.store_settings())
    try:
        [record] = store.list_documents()
        assert store.collection_info()["model"] == canonical_model_name(None)
    finally:
        store.close()
    assert record.metadata["fingerprint"] == index_fingerprint(canonical_model_name(None), chunker_options(settings),
                                                               ocr_identity(settings))


def test_run_that_cannot_proceed_exits_nonzero(tmp_path):
    pdf = write_sample_pdf(tmp_path / "sample.pdf")
    run = folioflow("ingest", str(pdf), "--embedding-model", str(tmp_path / "no-such-model"), "--no-progress",
                    cwd=tmp_path, home=tmp_path / "prefect-home")
    assert run.returncode == 1
    assert "ingest cannot proceed" in run.stderr


def test_ephemeral_server_that_does_not_start_is_one_error_line(tmp_path):
    """Prefect's ephemeral API server given no time to start (a real start-up, cut at 0 s): exit 1,
    one ``error:`` line naming the cause and the way out, no traceback, no report written."""
    pdf = write_sample_pdf(tmp_path / "sample.pdf")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(tmp_path / "home"),
           "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "0"}
    env.pop("PREFECT_API_URL", None)
    run = subprocess.run([sys.executable, "-m", "folioflow.flows.cli", "ingest", str(pdf), "--report", "r.json", "--no-progress"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert run.returncode == 1, run.stdout + run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, run.stderr[-3000:]
    assert "Prefect's ephemeral API server did not start within 0 s" in errors[0]
    assert "PREFECT_API_URL" in errors[0] and "Traceback" not in run.stderr
    assert not (tmp_path / "r.json").exists()


def test_a_prefect_database_from_a_newer_prefect_is_named(tmp_path):
    """A PREFECT_HOME whose database a newer Prefect migrated (here: an alembic revision no
    installed migration has) stops the ephemeral server at start-up; the error says so instead of
    blaming a slow machine."""
    import sqlite3

    home = tmp_path / "home"
    home.mkdir()
    with sqlite3.connect(home / "prefect.db") as con:
        con.execute("create table alembic_version (version_num varchar(32) not null primary key)")
        con.execute("insert into alembic_version values ('ffffffffffff')")
    pdf = write_sample_pdf(tmp_path / "sample.pdf")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(home),
           "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "0"}
    env.pop("PREFECT_API_URL", None)
    env.pop("PREFECT_API_DATABASE_CONNECTION_URL", None)
    run = subprocess.run([sys.executable, "-m", "folioflow.flows.cli", "ingest", str(pdf), "--no-progress"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert run.returncode == 1, run.stdout + run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "was migrated by a newer Prefect (revision ffffffffffff" in errors[0], run.stderr[-3000:]
    assert "PREFECT_HOME" in errors[0]


def test_show_query_and_status_find_documents_and_say_what_failed(tmp_path):
    """`show` takes what `query --doc` takes (bare file name when unambiguous; an ambiguous one
    lists the candidates); a --source or --doc filter that matches no indexed document exits 1
    with the reason; a document whose only page failed is failed in the registry with its page
    error, shown by `status --documents`, `show` and `query --doc`; `ingest --force` is in --help."""
    from folioflow.flows.reliability.hostile import image_page, raw_pdf, text_page

    docs = tmp_path / "docs"
    write_sample_pdf(docs / "a" / "sample.pdf")
    write_sample_pdf(docs / "b" / "sample.pdf")
    raw_pdf(docs / "lease.pdf", [text_page("Harbour Lease", "The tenant pays rent monthly to the harbour board.")])
    bomb = raw_pdf(docs / "scan-bad.pdf", [image_page(10_000, 10_000)])
    bomb.write_bytes(bomb.read_bytes().replace(b"/Width 10000 /Height 10000", b"/Width 90000 /Height 90000"))
    home = tmp_path / "prefect-home"

    run = folioflow("ingest", str(docs), "--report", "report.json", "--no-progress", cwd=tmp_path, home=home)
    assert run.returncode == 0, run.stderr[-3000:]
    records = {r["source"]: r for r in json.loads((tmp_path / "report.json").read_text())}
    failed = records[f"{docs}/scan-bad.pdf"]
    assert failed["status"] == "failed" and failed["error"].startswith("every page failed (1 of 1): page 1: image")
    assert "page 1: page 1:" not in failed["error"]

    show = folioflow("show", "lease.pdf", cwd=tmp_path, home=home)  # the bare name `status --documents` prints
    assert show.returncode == 0, show.stderr[-3000:]
    assert "Harbour Lease" in show.stdout
    ambiguous = folioflow("show", "sample.pdf", cwd=tmp_path, home=home)
    assert ambiguous.returncode == 1 and "matches 2 documents" in ambiguous.stderr
    for sample in ("a", "b"):
        assert records[f"{docs}/{sample}/sample.pdf"]["doc_id"] in ambiguous.stderr
    by_path = folioflow("show", str(docs / "b" / "sample.pdf"), "--page", "2", cwd=tmp_path, home=home)
    assert by_path.returncode == 0 and "<!-- page 2 -->" in by_path.stdout
    never = folioflow("show", "scan-bad.pdf", cwd=tmp_path, home=home)
    assert never.returncode == 1 and "is not indexed: its last run failed: page 1: image exceeds" in never.stderr

    status = json.loads(folioflow("status", "--json", "--documents", cwd=tmp_path, home=home).stdout)
    listed = {row["path"]: row for row in status["document_list"]}
    assert listed["scan-bad.pdf"]["status"] == "failed"
    assert listed["scan-bad.pdf"]["errors"][0].startswith("page 1: image exceeds the pixel limit")
    table = folioflow("status", "--documents", cwd=tmp_path, home=home)
    assert "scan-bad.pdf: page 1: image exceeds the pixel limit" in table.stdout

    typo = folioflow("status", "--collection", "nope", cwd=tmp_path, home=home)  # not "0 documents"
    assert typo.returncode == 1 and "no collection 'nope'" in typo.stderr and "'folioflow'" in typo.stderr
    nosuch = folioflow("query", "rent", "--source", "nosuch", cwd=tmp_path, home=home)
    assert nosuch.returncode == 1 and "no indexed document has source 'nosuch'" in nosuch.stderr
    bad_doc = folioflow("query", "rent", "--doc", "scan-bad.pdf", cwd=tmp_path, home=home)
    assert bad_doc.returncode == 1 and "is not indexed (its last run failed: page 1: image" in bad_doc.stderr
    fine = folioflow("query", "rent", "--doc", "lease.pdf", "--source", "default", "--json", cwd=tmp_path, home=home)
    assert fine.returncode == 0, fine.stderr[-3000:]
    assert {hit["doc_id"] for hit in json.loads(fine.stdout)} == {records[f"{docs}/lease.pdf"]["doc_id"]}

    helps = {cmd: folioflow(cmd, "--help", cwd=tmp_path, home=home).stdout for cmd in ("ingest", "query")}
    assert "--force" in helps["ingest"] and "Exits 1" in helps["query"]


@pytest.mark.parametrize(("text", "reason"), [("   ", "empty query"), ("x" * 4001, "query too long: 4001 characters")])
def test_query_refuses_empty_and_over_long_text_before_anything_loads(tmp_path, text, reason):
    """The same answer with a server or without one (a trial found "" answered with 5 chunks
    locally and a 422 through the server); no store or model is needed to say so."""
    out = folioflow("query", text, "--data-dir", str(tmp_path / "none"), cwd=tmp_path, home=tmp_path)
    assert out.returncode == 1 and reason in out.stderr, out.stderr[-2000:]
    assert not (tmp_path / "none").exists()


def test_every_change_in_the_report_is_one_usage_md_lists(tmp_path):
    """A tester's trial: a path that does not exist and a glob matching nothing had `"change": null`
    in the report, a value usage.md's list of `change` values did not have (an input refused for its
    content says `new`). The report's values, JSON null written `null`, are all in that list."""
    import re

    usage = (ROOT / "docs" / "usage.md").read_text()
    paragraph = usage[usage.index("`change` is one of"):].split("\n\n", 1)[0]
    listed = set(re.findall(r"`([^`]+)`", paragraph))
    (tmp_path / "notes.pdf").write_text("plain text saved with a .pdf name")
    run = folioflow("ingest", "notes.pdf", "missing.pdf", "nothing/*.pdf", "--report", "report.json", "--no-progress",
                    cwd=tmp_path, home=tmp_path / "prefect-home")
    assert run.returncode == 0, run.stderr[-3000:]
    records = {r["source"]: r for r in json.loads((tmp_path / "report.json").read_text())}
    assert records["notes.pdf"]["change"] == "new" and records["notes.pdf"]["error"].startswith("not a PDF")
    assert records["missing.pdf"]["error"] == "not found: missing.pdf", records
    assert records["nothing/*.pdf"]["status"] == "failed", records
    for record in records.values():
        shown = "null" if record["change"] is None else record["change"]
        assert shown in listed, (record["source"], shown, sorted(listed))
