// folioflow web UI: calls the JSON API with fetch (see docs/ui.md). Text from the server is only
// ever set with textContent; the one exception is a page's Markdown, which the server renders and
// sanitizes (nh3) before sending it as `html`.
"use strict";

const KEY_NAME = "folioflow.apiKey";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = value;
    else if (name === "class") node.className = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function showMessage(text) {
  const box = document.getElementById("message");
  box.textContent = text || "";
  box.hidden = !text;
}

class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

function authHeaders() {
  const key = sessionStorage.getItem(KEY_NAME);
  return key ? { Authorization: "Bearer " + key } : {};
}

// fetch an API path; returns the Response, or throws ApiError with the server's one-line reason.
async function api(path, options) {
  const opts = Object.assign({}, options || {});
  opts.headers = Object.assign({}, opts.headers || {}, authHeaders());
  const response = await fetch(path, opts);
  if (!response.ok) {
    let detail = response.statusText;
    try {
      detail = (await response.json()).detail || detail;
    } catch (err) {
      // not JSON: keep the status text
    }
    if (response.status === 401) detail += " (enter the API key at the top of the page)";
    throw new ApiError(response.status, `${response.status}: ${detail}`);
  }
  return response;
}

async function apiJson(path, options) {
  return (await api(path, options)).json();
}

// A page image fetched with the API key, as an <img> whose src is a blob: URL.
async function pageImage(docId, number, dpi, alt) {
  const response = await api(`/v1/documents/${encodeURIComponent(docId)}/pages/${number}/image?dpi=${dpi}`);
  const img = el("img", { alt: alt, class: "page-png" });
  img.src = URL.createObjectURL(await response.blob());
  await img.decode().catch(() => undefined);
  return img;
}

// Absolutely positioned highlight boxes over an image of a page of width x height points.
function highlight(container, boxes, width, height, label) {
  for (const [x0, y0, x1, y1] of boxes) {
    const box = el("div", { class: "bbox", title: label || "" });
    // CSSOM, not a style attribute: the page's Content-Security-Policy forbids inline styles
    box.style.left = `${(100 * x0 / width).toFixed(3)}%`;
    box.style.top = `${(100 * y0 / height).toFixed(3)}%`;
    box.style.width = `${(100 * (x1 - x0) / width).toFixed(3)}%`;
    box.style.height = `${(100 * (y1 - y0) / height).toFixed(3)}%`;
    container.append(box);
  }
}

function docLink(docId, label, page) {
  const href = `/ui/documents/${encodeURIComponent(docId)}` + (page ? `?page=${page}` : "");
  return el("a", { href: href, text: label });
}

function fileName(path) {
  return String(path || "").split(/[\\/]/).pop();
}

// ---- the key field ---------------------------------------------------------------------------
function setupKey() {
  const form = document.getElementById("key-form");
  const input = document.getElementById("api-key");
  const state = document.getElementById("key-state");
  const refresh = () => {
    state.textContent = sessionStorage.getItem(KEY_NAME) ? "key set for this tab" : "no key";
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (input.value.trim()) sessionStorage.setItem(KEY_NAME, input.value.trim());
    input.value = "";
    refresh();
    location.reload();
  });
  document.getElementById("key-clear").addEventListener("click", () => {
    sessionStorage.removeItem(KEY_NAME);
    refresh();
  });
  refresh();
}

// ---- upload and job progress -----------------------------------------------------------------
function renderJob(card, job) {
  card.replaceChildren();
  card.dataset.state = job.state;
  const p = job.progress || {};
  const pct = p.pages_total ? Math.round(100 * p.pages_done / p.pages_total) : (job.state === "succeeded" ? 100 : 0);
  card.append(
    el("h2", {}, "Job ", el("code", { text: job.id.slice(0, 12) }), ": ", el("span", { class: "state", text: job.state })),
    el("p", { class: "muted", text: job.inputs.join(", ") }),
    el("progress", { max: "100", value: String(pct) }),
    el("p", { class: "progress-text", text:
      `${p.documents_started || 0} document(s) started, ${p.documents_skipped || 0} skipped, ` +
      `${p.pages_done || 0} of ${p.pages_total || 0} page(s) converted` }),
  );
  if (job.error) card.append(el("p", { class: "error", text: job.error }));
  if (job.documents && job.documents.length) {
    const list = el("ul", { class: "job-documents" });
    for (const d of job.documents) {
      const failed = d.failed_pages || [], partial = d.partial_pages || [];
      const counts = d.pages !== undefined ? [`${d.pages} page(s)`, `${d.chunks || 0} chunk(s)`] : [];
      if (failed.length) counts.push(`${failed.length} page(s) failed`);
      if (partial.length) counts.push(`${partial.length} page(s) partial`);
      const item = el("li", { "data-status": d.status },
        d.doc_id && d.status !== "failed" ? docLink(d.doc_id, fileName(d.source)) : fileName(d.source),
        " ", el("span", { class: "badge " + d.status, text: d.status }), counts.length ? " " + counts.join(", ") : "");
      if (d.error) item.append(el("div", { class: "error", text: d.error }));
      // the reasons, one per page ("page N: ..."): a failed page's error, or why a partial page is partial
      for (const note of d.page_errors || []) {
        const m = /^page (\d+):/.exec(note);
        const isPartial = m !== null && partial.includes(Number(m[1])) && !failed.includes(Number(m[1]));
        item.append(el("div", { class: isPartial ? "partial" : "error", text: note }));
      }
      list.append(item);
    }
    card.append(list);
  }
}

async function watchJob(card, job) {
  renderJob(card, job);
  while (job.state === "queued" || job.state === "running") {
    await new Promise((resolve) => setTimeout(resolve, 500));
    try {
      job = await apiJson(`/v1/jobs/${encodeURIComponent(job.id)}`);
    } catch (err) {
      card.append(el("p", { class: "error", text: err.message }));
      return;
    }
    renderJob(card, job);
  }
}

function setupUpload() {
  const form = document.getElementById("upload-form");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    showMessage("");
    const files = document.getElementById("files").files;
    if (!files.length) return;
    const body = new FormData();
    for (const file of files) body.append("files", file, file.name);
    if (document.getElementById("force").checked) body.append("force", "true");
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      const job = await apiJson("/v1/documents", { method: "POST", body: body });
      const card = el("article", { class: "job", "data-job": job.id });
      document.getElementById("jobs").prepend(card);
      form.reset();
      await watchJob(card, job);
    } catch (err) {
      showMessage(err.message);
    } finally {
      button.disabled = false;
    }
  });
}

// ---- document list ---------------------------------------------------------------------------
// The index's documents (GET /v1/documents), then the documents that recent jobs report failed but
// that never reached the index's registry (a file that could not even be opened, such as a
// truncated PDF, has no record): they are listed from the job reports (GET /v1/jobs).
async function setupDocuments() {
  let status = null;
  let jobs = [];
  try {
    status = await apiJson("/v1/documents");
  } catch (err) {
    if (err.status !== 404) {
      showMessage(err.message);
      return;
    }
  }
  try {
    jobs = await apiJson("/v1/jobs");
  } catch (err) {
    showMessage(err.message);
  }
  const rows = (status && status.document_list) || [];
  const known = new Set(rows.map((d) => d.doc_id));
  const unrecorded = [];
  for (const job of jobs) { // newest first: a document's latest report wins
    for (const d of job.documents || []) {
      const key = d.doc_id || d.source;
      if (d.status !== "failed" || known.has(key)) continue;
      known.add(key);
      unrecorded.push({ report: d, job: job });
    }
  }
  // an index nothing was ingested into yet answers 0 documents (a server before that answered 404)
  document.getElementById("summary").textContent = status && status.documents
    ? `${status.documents} document(s), ${status.chunks} chunk(s) in collection ${status.collection}` +
      (unrecorded.length ? `; ${unrecorded.length} more failed before reaching the index` : "")
    : (unrecorded.length ? `No document in the index; ${unrecorded.length} failed before reaching it.`
                         : "No documents yet: upload some.");
  const body = document.querySelector("#documents tbody");
  for (const d of rows) body.append(documentRow(d));
  for (const { report, job } of unrecorded) {
    body.append(el("tr", { "data-doc-id": report.doc_id || "", "data-status": "failed", class: "unrecorded" },
      el("td", {}, fileName(report.source), el("div", { class: "muted small", text: report.source })),
      el("td", {}, el("span", { class: "badge failed", text: "failed" })),
      el("td", { text: report.pages }), el("td", { text: report.chunks }), el("td", { text: report.source_name || "" }),
      el("td", { text: String(job.finished_at || job.created_at || "").replace("T", " ").slice(0, 19) }),
      el("td", { class: "errors" }, el("div", { class: "error", text: report.error || "failed" }),
         el("div", { class: "muted small", text: `not in the index (job ${job.id.slice(0, 12)})` })),
      el("td", {})));
  }
  document.getElementById("documents").hidden = body.children.length === 0;
}

// A document's partial pages with their reasons ("page N: fidelity: ..."): pages indexed with part
// of their content missing or implausible. A server older than partial_notes has no such key.
function partialNotes(d) {
  const pages = d.partial_pages || [];
  return d.partial_notes && d.partial_notes.length ? d.partial_notes : pages.map((n) => `page ${n}: partial`);
}

function documentRow(d) {
  const errors = el("td", { class: "errors" });
  for (const e of d.errors || []) errors.append(el("div", { class: "error", text: e }));
  if (d.failed_pages && d.failed_pages.length) {
    errors.append(el("div", { class: "muted", text: "failed pages: " + d.failed_pages.join(", ") }));
  }
  for (const note of partialNotes(d)) errors.append(el("div", { class: "partial", text: note }));
  if (d.partial_pages && d.partial_pages.length) {
    errors.append(el("div", { class: "muted", text: "partial pages: " + d.partial_pages.join(", ") }));
  }
  const del = el("button", { type: "button", class: "delete", text: "Delete" });
  const row = el("tr", { "data-doc-id": d.doc_id, "data-status": d.status },
    el("td", {}, docLink(d.doc_id, fileName(d.path)), el("div", { class: "muted small", text: d.path })),
    el("td", {}, el("span", { class: "badge " + d.status, text: d.status })),
    el("td", { text: d.pages }), el("td", { text: d.chunks }), el("td", { text: d.source }),
    el("td", { text: String(d.indexed_at || "").replace("T", " ").slice(0, 19) }),
    errors, el("td", {}, del));
  del.addEventListener("click", async () => {
    if (!confirm(`Delete ${fileName(d.path)} from the index?`)) return;
    try {
      await api(`/v1/documents/${encodeURIComponent(d.doc_id)}`, { method: "DELETE" });
      row.remove();
    } catch (err) {
      showMessage(err.message);
    }
  });
  return row;
}

// ---- one document, page by page ----------------------------------------------------------------
async function setupDocument() {
  if (document.body.dataset.missing) return; // the server's 404 page: it says so itself
  const docId = document.body.dataset.docId;
  let detail;
  try {
    detail = await apiJson(`/v1/documents/${encodeURIComponent(docId)}`);
  } catch (err) {
    // with API keys the server sends this page for any key; the API's 404 says that none matches
    if (err.status === 404) {
      document.getElementById("doc-title").textContent = "No such document";
      document.title = "No such document · folioflow";
    }
    showMessage(err.message);
    return;
  }
  document.getElementById("doc-title").textContent = fileName(detail.path);
  document.title = fileName(detail.path) + " · folioflow";
  const meta = document.getElementById("doc-meta");
  const facts = [["Status", detail.status], ["Pages", detail.pages], ["Chunks", detail.chunks],
    ["Source", detail.source], ["Path", detail.path], ["Document id", detail.doc_id],
    ["Failed pages", (detail.failed_pages || []).join(", ") || "none"],
    ["Partial pages", (detail.partial_pages || []).join(", ") || "none"]];
  for (const [name, value] of facts) meta.append(el("dt", { text: name }), el("dd", { text: value }));
  const errors = document.getElementById("doc-errors");
  for (const e of detail.errors || []) errors.append(el("li", { class: "error", text: e }));
  const partial = document.getElementById("doc-partial");
  for (const note of partialNotes(detail)) partial.append(el("li", { class: "partial", text: note }));
  if (!detail.pages) return;

  const input = document.getElementById("page-number");
  input.max = String(detail.pages);
  document.getElementById("page-count").textContent = detail.pages;
  document.getElementById("pager").hidden = false;
  const start = parseInt(new URLSearchParams(location.search).get("page") || "1", 10);
  const show = async (n) => {
    n = Math.min(Math.max(1, n || 1), detail.pages);
    input.value = String(n);
    history.replaceState(null, "", `?page=${n}`);
    await showPage(detail.doc_id, n);
  };
  document.getElementById("prev").addEventListener("click", () => show(parseInt(input.value, 10) - 1));
  document.getElementById("next").addEventListener("click", () => show(parseInt(input.value, 10) + 1));
  input.addEventListener("change", () => show(parseInt(input.value, 10)));
  await show(start);
}

async function showPage(docId, n) {
  const view = document.getElementById("page-view");
  view.dataset.loading = "true";
  try {
    const page = await apiJson(`/v1/documents/${encodeURIComponent(docId)}/pages/${n}`);
    const figure = document.getElementById("page-figure");
    figure.replaceChildren(await pageImage(docId, n, 110, `Page ${n}`));
    for (const chunk of page.chunks) {
      highlight(figure, chunk.bboxes, page.width, page.height, `chunk ${chunk.index}: ${chunk.heading_path.join(" › ")}`);
    }
    document.getElementById("page-caption").textContent =
      `Page ${n} · ${page.engine || "engine unknown"} · ${page.status || ""}` + (page.errors.length ? " · " + page.errors.join("; ") : "");
    const html = document.getElementById("page-html");
    if (page.html !== null) html.innerHTML = page.html; // sanitized by the server (nh3)
    else html.replaceChildren(el("p", { class: "muted", text: "The converted page was not kept (keep_documents is off)." }));
    const chunks = document.getElementById("page-chunks");
    chunks.replaceChildren();
    for (const chunk of page.chunks) {
      chunks.append(el("li", { class: "chunk", "data-index": chunk.index },
        el("div", { class: "heading-path", text: chunk.heading_path.join(" › ") || "(no heading)" }),
        el("div", { class: "muted small", text: `chunk ${chunk.index} · ${chunk.kind || ""} · pages ${chunk.page_start}–${chunk.page_end}` }),
        el("pre", { text: chunk.text })));
    }
    if (!page.chunks.length) chunks.append(el("li", { class: "muted", text: "No chunk on this page." }));
    view.hidden = false;
  } catch (err) {
    showMessage(err.message);
  } finally {
    delete view.dataset.loading;
  }
}

// ---- search ------------------------------------------------------------------------------------
async function setupSearch() {
  const form = document.getElementById("search-form");
  const params = new URLSearchParams(location.search);
  if (params.get("q")) document.getElementById("query").value = params.get("q");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await runSearch();
  });
  if (params.get("q")) await runSearch();
}

async function runSearch() {
  showMessage("");
  const text = document.getElementById("query").value.trim();
  if (!text) return;
  const body = { text: text, k: parseInt(document.getElementById("k").value, 10) || 5,
                 mode: document.getElementById("mode").value };
  const tenant = document.getElementById("tenant").value.trim();
  if (tenant) body.tenant = tenant;
  history.replaceState(null, "", "?q=" + encodeURIComponent(text));
  const results = document.getElementById("results");
  results.replaceChildren();
  results.dataset.loading = "true";
  const summary = document.getElementById("search-summary");
  try {
    const hits = await apiJson("/v1/query", { method: "POST", headers: { "Content-Type": "application/json" },
                                              body: JSON.stringify(body) });
    summary.textContent = `${hits.length} result(s)`;
    const pages = new Map();
    for (const hit of hits) results.append(await renderHit(hit, pages));
  } catch (err) {
    summary.textContent = "";
    showMessage(err.message);
  } finally {
    delete results.dataset.loading;
  }
}

async function renderHit(hit, pages) {
  const pagesText = hit.page_start === hit.page_end ? `page ${hit.page_start}` : `pages ${hit.page_start}–${hit.page_end}`;
  const thumb = el("div", { class: "boxed thumb" });
  const item = el("li", { class: "hit" },
    el("a", { class: "thumb-link", href: `/ui/documents/${encodeURIComponent(hit.doc_id)}?page=${hit.page_start}` }, thumb),
    el("div", { class: "hit-text" },
      el("div", { class: "heading-path", text: (hit.heading_path || []).join(" › ") || "(no heading)" }),
      el("div", { class: "cite" }, docLink(hit.doc_id, fileName(hit.path || hit.uri), hit.page_start),
         " · ", el("span", { class: "pages", text: pagesText }),
         " · ", el("span", { class: "muted", text: `score ${hit.score.toFixed(3)}` })),
      el("pre", { text: hit.text })));
  try {
    const key = `${hit.doc_id}:${hit.page_start}`;
    if (!pages.has(key)) pages.set(key, apiJson(`/v1/documents/${encodeURIComponent(hit.doc_id)}/pages/${hit.page_start}`));
    const page = await pages.get(key);
    thumb.append(await pageImage(hit.doc_id, hit.page_start, 40, `Page ${hit.page_start}`));
    const chunk = page.chunks.find((c) => c.index === hit.chunk_index);
    if (chunk) highlight(thumb, chunk.bboxes, page.width, page.height, (hit.heading_path || []).join(" › "));
  } catch (err) {
    thumb.append(el("span", { class: "muted small", text: "no page image: " + err.message }));
  }
  return item;
}

document.addEventListener("DOMContentLoaded", () => {
  setupKey();
  const setup = { upload: setupUpload, documents: setupDocuments, document: setupDocument, search: setupSearch };
  const page = document.body.dataset.page;
  Promise.resolve(setup[page] && setup[page]()).finally(() => { document.body.dataset.ready = "true"; });
});
