"""Options and commands a new user got wrong, in fresh `folioflow` processes: a mistake is said at
once, with what the option means or which command was meant, before any model, store or Prefect
run starts; an option the other commands take (`--data-dir`) is taken by `watch` too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from folioflow.ocr.extras import installed
from folioflow.ocr.samples import write_sample_pdf
from tests.flows import servers

ROOT = Path(__file__).resolve().parents[2]


# servers.folioflow with plain output (no colour, a dumb terminal) and 300 s for each command
folioflow = partial(servers.folioflow, timeout=300, env={"NO_COLOR": "1", "TERM": "dumb"})


def test_ingest_refuses_an_unknown_vlm_profile_whatever_the_engine(tmp_path):
    """A user's trial: `ingest --profile bogus` indexed the file and exited 0 (the profile is read
    only by a VLM engine); only with `--engine vlm` was it refused. Now it is refused with every
    engine, before any work, and the message says where the retrieval profile is."""
    pdf = write_sample_pdf(tmp_path / "sample.pdf")
    data = tmp_path / "kb"
    for engine in ((), ("--engine", "text"), ("--engine", "vlm")):
        run = folioflow("ingest", str(pdf), "--data-dir", str(data), "--profile", "bogus", "--no-progress", *engine,
                        cwd=tmp_path)
        if not installed("vlm"):
            assert run.returncode == 1 and "folioflow[vlm]" in run.stderr, run.stderr[-2000:]
            continue
        assert run.returncode == 1, (engine, run.stdout[-2000:], run.stderr[-2000:])
        assert "error: unknown VLM profile 'bogus'; choose from ['chandra'," in run.stderr, run.stderr[-2000:]
        assert "retrieval profile (finance, legal, general) is `folioflow query --profile`" in run.stderr
        assert "Traceback" not in run.stderr
        assert not data.exists()  # said before the store was opened or anything indexed
    # another bad option exits the same way (1, one error line)
    engine = folioflow("ingest", str(pdf), "--data-dir", str(data), "--engine", "bogus", cwd=tmp_path)
    assert engine.returncode == 1 and engine.stderr.startswith("error: ")
    if installed("vlm"):  # a known profile (and variant) passes the check: the next one stops it here
        for good in ("chandra", "deepseek-ocr:tiny", "generic", "auto"):
            run = folioflow("ingest", str(pdf), "--profile", good, "--api-url", "http://127.0.0.1:9", cwd=tmp_path)
            assert run.returncode == 1 and "--profile: not with the API server" in run.stderr, (good, run.stderr)


def test_ingest_help_says_profile_is_the_vlm_output_profile(tmp_path):
    helped = " ".join(folioflow("ingest", "--help", cwd=tmp_path).stdout.split())
    assert "VLM output profile: the OCR model's output format" in helped
    assert "Not the retrieval profile (finance, legal, general): that is folioflow query --profile" in helped


def test_serve_without_prefect_points_to_the_api_command(tmp_path):
    """A user who wanted the HTTP API ran `folioflow serve` and read only "no Prefect server: set
    PREFECT_API_URL": the message and `serve --help` now name `folioflow api`."""
    run = folioflow("serve", cwd=tmp_path)
    assert run.returncode == 1, run.stderr[-2000:]
    said = " ".join(run.stderr.split())
    assert said.startswith("error: no Prefect server: set PREFECT_API_URL") and "Traceback" not in said
    assert "For the HTTP API server and web UI, run `folioflow api`" in said
    helped = " ".join(folioflow("serve", "--help", cwd=tmp_path).stdout.split())
    assert "Not the HTTP API server and web UI: that is folioflow api" in helped


@pytest.mark.slow
def test_watch_takes_data_dir_over_the_config_file(tmp_path):
    """`folioflow watch --data-dir kb` answered "No such option"; it now indexes the configured
    sources into kb, whatever data_dir the settings file names."""
    write_sample_pdf(tmp_path / "docs" / "sample.pdf")
    (tmp_path / "watch.yaml").write_text(f"data_dir: {tmp_path / 'elsewhere'}\n"
                                         f"sources:\n  - name: docs\n    url: {tmp_path / 'docs'}\n")
    run = folioflow("watch", "--config", "watch.yaml", "--data-dir", "kb", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "Watch summary" in run.stdout
    status = folioflow("status", "--json", "--data-dir", "kb", cwd=tmp_path)
    assert status.returncode == 0 and json.loads(status.stdout)["sources"]["docs"]["documents"] == 1, status.stderr
    assert not (tmp_path / "elsewhere").exists()


def test_convert_exit_codes_follow_ingest_and_help_says_them(tmp_path):
    """A user found `convert` exiting 0 when a document failed. That is `ingest`'s rule (exit 0
    when every document was processed or failed with its reason; 1 when the run cannot proceed),
    which convert keeps; its --help and docs/usage.md now say so, and this pins the codes."""
    pdf = write_sample_pdf(tmp_path / "in" / "good.pdf")
    (tmp_path / "in" / "broken.pdf").write_text("plain text saved with a .pdf name")
    out = tmp_path / "out"
    mixed = folioflow("convert", str(tmp_path / "in"), str(tmp_path / "missing.pdf"), "-o", str(out), "--engine", "text",
                      cwd=tmp_path)
    assert mixed.returncode == 0, mixed.stderr[-2000:]
    assert "broken.pdf" in mixed.stdout and "not found" in mixed.stdout and (out / "good.md").is_file()
    (tmp_path / "empty").mkdir()
    nothing = folioflow("convert", str(tmp_path / "empty"), "-o", str(out), cwd=tmp_path)
    assert nothing.returncode == 1 and "no input documents" in nothing.stderr
    bad = folioflow("convert", str(pdf), "-o", str(out), "--engine", "bogus", cwd=tmp_path)
    assert bad.returncode == 2
    helped = " ".join(folioflow("convert", "--help", cwd=tmp_path).stdout.split())
    assert "Exit codes follow ingest's: 0 when every document was converted or failed with its reason; 1 when" in helped


def test_convert_says_a_bad_vlm_profile_or_missing_endpoint_without_a_traceback(tmp_path):
    """`convert --profile bogus` (found beside ingest's --profile), `--profile chandra` or
    `--engine vlm` without --ocr-endpoint ended in a Python traceback (VlmOptions' "endpoints:
    Field required", or the profile lookup's ConfigurationError): now one error line, exit 2 as for
    convert's other bad options."""
    pdf = write_sample_pdf(tmp_path / "good.pdf")
    out = str(tmp_path / "out")
    cases = [(("--profile", "chandra"), "--ocr-endpoint"), (("--engine", "vlm"), "--ocr-endpoint")]
    if installed("vlm"):
        cases.append((("--profile", "bogus", "--ocr-endpoint", "http://127.0.0.1:9/v1"),
                      "unknown VLM profile 'bogus'; choose from"))
    for args, reason in cases:
        run = folioflow("convert", str(pdf), "-o", out, *args, cwd=tmp_path)
        said = " ".join(run.stderr.split())
        assert run.returncode == 2 and reason in said and "Traceback" not in said, (args, run.stderr[-2000:])


def test_a_report_path_that_cannot_be_written_is_refused_before_the_run(tmp_path):
    """A breaking trial: `ingest --report <a folder>` ran the whole ingest, then ended with an
    IsADirectoryError traceback and no report. Now refused at once, before any store is made."""
    pdf = write_sample_pdf(tmp_path / "sample.pdf")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for report, said in ((tmp_path, "is a folder"), (blocker / "r.json", "not a folder")):
        run = folioflow("ingest", str(pdf), "--data-dir", str(tmp_path / "kb"), "--report", str(report),
                        "--no-progress", cwd=tmp_path)
        assert run.returncode == 1 and said in run.stderr and "Traceback" not in run.stderr, run.stderr[-2000:]
        assert not (tmp_path / "kb").exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_output_that_cannot_be_written_is_one_line(tmp_path):
    """`folioflow ... > /dev/full` (a full disk) ended with an OSError traceback."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    with open("/dev/full", "w") as full:
        run = subprocess.run([sys.executable, "-m", "folioflow.flows.cli", "sample", "--output", str(tmp_path / "s.pdf")],
                             cwd=tmp_path, env={**os.environ, "PYTHONPATH": path}, stdout=full, stderr=subprocess.PIPE,
                             text=True, timeout=300)
    assert run.returncode == 1 and run.stderr.strip() == "folioflow: cannot write the output: No space left on device", \
        run.stderr[-2000:]


def test_query_k_has_the_api_servers_range(tmp_path):
    """A breaking trial: `query -k 1000` worked without a server and was a 422 through one (1-100)."""
    run = folioflow("query", "revenue", "-k", "101", "--data-dir", str(tmp_path / "kb"), cwd=tmp_path)
    assert run.returncode == 2 and "less than or equal to 100" in run.stderr, run.stderr[-2000:]


def test_a_pdf_cut_short_is_refused_unless_allow_truncated(tmp_path):
    """A breaking trial: pdf.js's scan-bad.pdf (no %%EOF; PDFium opens it) was refused as truncated
    and only Python's RenderLimits could accept it. The refusal now names the setting, and
    `allow_truncated` (here FOLIOFLOW_ALLOW_TRUNCATED) indexes the pages PDFium recovers."""
    data = write_sample_pdf(tmp_path / "whole.pdf").read_bytes()
    end = data.rstrip().rfind(b"%%EOF")
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[:end])  # everything but the end-of-file marker: an interrupted download's shape
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    reports = {}
    for allow in ("0", "1"):
        env = {**os.environ, "PYTHONPATH": path, "PREFECT_HOME": str(tmp_path / "prefect-home"),
               "FOLIOFLOW_ALLOW_TRUNCATED": allow}
        env.pop("PREFECT_API_URL", None)
        report = tmp_path / f"r{allow}.json"
        run = subprocess.run([sys.executable, "-m", "folioflow.flows.cli", "ingest", str(cut), "--data-dir",
                              str(tmp_path / f"kb{allow}"), "--report", str(report), "--no-progress"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert run.returncode == 0, run.stderr[-3000:]
        [reports[allow]] = json.loads(report.read_text())
    assert reports["0"]["status"] == "failed" and "truncated" in reports["0"]["error"], reports["0"]
    assert "allow_truncated" in reports["0"]["error"]
    assert reports["1"]["status"] == "indexed" and reports["1"]["pages"] == 2 and reports["1"]["chunks"] > 0, reports["1"]


def test_a_document_indexed_with_no_text_is_counted_in_the_summary(tmp_path):
    """A user's trial: pdf.js's empty_protected.pdf (one blank page) was reported indexed, 1 page,
    0 chunks, with nothing to say no text came out of it. The run summary now counts such
    documents."""
    import pypdfium2 as pdfium

    blank = pdfium.PdfDocument.new()
    blank.new_page(612, 792)
    blank.save(str(tmp_path / "blank.pdf"))
    blank.close()
    write_sample_pdf(tmp_path / "docs" / "report.pdf")
    (tmp_path / "blank.pdf").replace(tmp_path / "docs" / "blank.pdf")
    run = folioflow("ingest", str(tmp_path / "docs"), "--data-dir", str(tmp_path / "kb"), "--no-progress",
                    "--report", str(tmp_path / "r.json"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = {Path(r["source"]).name: r for r in json.loads((tmp_path / "r.json").read_text())}
    assert (rows["blank.pdf"]["status"], rows["blank.pdf"]["pages"], rows["blank.pdf"]["chunks"]) == ("indexed", 1, 0)
    assert rows["report.pdf"]["chunks"] > 0
    [line] = [line for line in run.stdout.splitlines() if "with no text (0 chunks)" in line]
    assert line.replace("│", " ").split()[-1] == "1", line


def test_help_piped_is_wide_enough_to_read(tmp_path):
    """A user's trial: `folioflow query --help | cat` wrapped each option's help a word or two per
    line (rich's 80 columns when not a terminal). Piped, without COLUMNS, help is 120 wide."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    run = subprocess.run([sys.executable, "-m", "folioflow.flows.cli", "query", "--help"], cwd=tmp_path,
                         env={**env, "PYTHONPATH": path, "NO_COLOR": "1"}, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    [line] = [line for line in run.stdout.splitlines() if "--glossary" in line]
    assert "finance" in line, run.stdout[:3000]
    assert max(len(line) for line in run.stdout.splitlines()) == 120
