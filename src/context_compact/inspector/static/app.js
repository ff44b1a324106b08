// The inspector page. Served: it asks the JSON API (server.py). Written to a file: the same
// answers are embedded in #cc-data (report.py) and answered here. Text from the log is only
// ever set as textContent: a session's content is data, never markup.
"use strict";

let DATA = null; // the embedded answers of a written report, once unpacked

async function unpack(node) {
  const bytes = Uint8Array.from(atob(node.textContent.trim()), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).json();
}
const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const state = { session: null, summary: null, request: 1, view: null, token: null };

// -- the data: the API, or the embedded answers ------------------------------------------
async function api(name, params) {
  if (DATA) return offline[name](params);
  // The header the server's guard asks of the API: a page of another site cannot send it.
  const response = await fetch("/api/" + name + "?" + new URLSearchParams(params),
                               { headers: { "X-Context-Compact": "inspector" } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error);
  return body;
}

// The one write (served only): undo the newest compaction. The server asks for the page's
// origin, its header and the token /api/sessions gave this page (guard.py); a token writes
// once, and the answer carries the next.
async function post(name, params) {
  const response = await fetch("/api/" + name + "?" + new URLSearchParams(params), {
    method: "POST", headers: { "X-Context-Compact": "inspector", "X-Context-Compact-Token": state.token } });
  const body = await response.json();
  if (body.token) state.token = body.token;
  if (!response.ok) throw new Error(body.error);
  return body;
}

async function undoNewest() {
  if (!confirm("Undo the newest compaction of this session? It stays in the log, marked undone.")) return;
  try {
    const done = await post("undo", { id: state.session });
    await loadSession(state.session);
    $("undo-facts").textContent = `${done.note}: the view is now ${fmt(done.tokens_after)} tokens ` +
      `(was ${fmt(done.tokens_before)})`;
  } catch (error) { $("undo-facts").textContent = String(error.message); }
}

function spansOf(spans) {
  const out = [];
  for (const [start, count] of spans) for (let i = start; i < start + count; i++) out.push(i);
  return out;
}

function firstSent(answers, seq) {
  let lo = 0, hi = answers.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (answers[mid] <= seq) lo = mid + 1; else hi = mid; }
  return lo < answers.length ? lo + 1 : null;
}

// A text hit in a long message shows its matches, as recall does (session/recall.py): a
// window of WINDOW characters round each (the first WINDOWS), under a header saying where.
const WINDOW = 400, WINDOWS = 3;
const messageHead = (h) => "=== message " + h.message + " (" + h.role + ") ===";
function windowsOf(h, q) {
  const text = h.text, lower = text.toLowerCase(), needle = q.toLowerCase();
  if (text.length <= 2 * WINDOW + q.length) return messageHead(h) + "\n" + text;
  const spans = [];
  for (let i = lower.indexOf(needle); i >= 0 && needle; i = lower.indexOf(needle, i + needle.length)) {
    const lo = Math.max(0, i - WINDOW), hi = Math.min(text.length, i + needle.length + WINDOW);
    if (spans.length && lo <= spans[spans.length - 1][1]) spans[spans.length - 1][1] = hi;
    else spans.push([lo, hi]);
  }
  if (!spans.length) spans.push([0, 2 * WINDOW]);
  const skip = messageHead(h).length + 1;
  const shown = spans.slice(0, WINDOWS).map(([lo, hi]) =>
    `=== message ${h.message} (${h.role}), characters ${lo}-${hi} of ${text.length}; whole ` +
    `message: recall("message ${h.message}", offset=${skip + lo}) ===\n` + text.slice(lo, hi));
  if (spans.length > WINDOWS) {
    shown.push(`--- ${spans.length - WINDOWS} more match(es) in message ${h.message}: ` +
      `recall("message ${h.message}") ---`);
  }
  return shown.join("\n");
}

const offline = {
  sessions: () => ({ sessions: DATA.sessions, selected: DATA.selected,
    policies: DATA.compare.policies.length ? DATA.compare.policies.map((p) => p.policy)
      : ["default", "codex"] }),
  session: () => DATA.summary,
  events: ({ offset }) => ({ total: DATA.events.length, offset: Number(offset),
    rows: DATA.events.slice(Number(offset), Number(offset) + 200) }),
  view: ({ request }) => {
    const r = DATA.requests[request - 1];
    const ids = spansOf(r.spans);
    const links = [...new Set(ids.flatMap((i) => DATA.links[i]))];
    return { request, tokens: DATA.summary.tokens[request - 1], answer: r.answer,
      cache_break: r.cache_break, messages: ids.map((i) => DATA.messages[i]), links,
      events: DATA.events.filter((e) => e.request === request) };
  },
  archive: ({ path }) => {
    if (!(path in DATA.archives)) throw new Error(path + " is not in this report");
    return { path, text: DATA.archives[path] };
  },
  search: ({ q, offset }) => {
    const needle = q.trim();
    if (!needle) throw new Error("search needs a non-empty query");
    let hits;
    const position = /^\s*(?:message\s+|#)(\d+)\s*$/i.exec(q);
    if (needle in DATA.archives) hits = [{ head: "=== " + needle + " ===", text: DATA.archives[needle] }];
    else if (position) hits = DATA.texts.filter((t) => t.message === Number(position[1]));
    else hits = DATA.texts.filter((t) => t.text.toLowerCase().includes(q.toLowerCase()));
    const parts = hits.map((h) => (h.head ? h.head + "\n" + h.text
      : position ? messageHead(h) + "\n" + h.text : windowsOf(h, q)));
    const whole = parts.join("\n\n");
    const start = Number(offset) || 0, text = whole.slice(start, start + 20000);
    const answers = DATA.requests.map((r) => r.answer);
    return { query: q, hits: hits.length, offset: start, total: whole.length,
      next_offset: start + text.length < whole.length ? start + text.length : null, text,
      messages: hits.filter((h) => h.message !== undefined)
        .map((h) => ({ message: h.message, first_sent: firstSent(answers, h.message) })),
      links: Object.keys(DATA.archives).filter((p) => text.includes(p)) };
  },
  compare: () => DATA.compare,
};

// -- small helpers -----------------------------------------------------------------------
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child);
  return node;
}
function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}
const fmt = (n) => (n === null || n === undefined ? "-" : Number(n).toLocaleString("en"));

function archiveLink(path, label, lines) {
  return el("a", { class: "archive-link", href: "#", "data-path": path,
    onclick: (e) => { e.preventDefault(); openArchive(path, lines); } }, label || path);
}

// Text with every path the store issued (``links``) made a link to its archived original.
function linked(text, paths) {
  const out = el("pre");
  const range = / lines (\d+)-(\d+)/y;
  let at = 0;
  for (;;) {
    let best = -1, found = null;
    for (const p of paths) {
      const i = text.indexOf(p, at);
      if (i >= 0 && (best < 0 || i < best || (i === best && p.length > found.length))) { best = i; found = p; }
    }
    if (best < 0) break;
    // A cleared result shares a pack: its marker says which lines of the file are its own.
    range.lastIndex = best + found.length;
    const lines = range.exec(text);
    out.append(text.slice(at, best), archiveLink(found, null, lines && [+lines[1], +lines[2]]));
    at = best + found.length;
  }
  out.append(text.slice(at));
  return out;
}

// -- the chart ---------------------------------------------------------------------------
const PAD = { left: 58, right: 12, top: 10, bottom: 34 };

function drawChart(box, tokens, opts) {
  box.replaceChildren();
  const width = Math.max(320, box.clientWidth || box.parentNode.clientWidth || 900);
  const height = opts.height || 240;
  box.setAttribute("viewBox", `0 0 ${width} ${height}`);
  box.setAttribute("height", height);
  const n = Math.max(1, tokens.length);
  const peak = Math.max(1, ...tokens, opts.limit || 0);
  const plotW = width - PAD.left - PAD.right, plotH = height - PAD.top - PAD.bottom;
  const x = (i) => PAD.left + ((i - 0.5) * plotW) / n;
  const y = (v) => PAD.top + plotH - (v / peak) * plotH;
  box.append(svg("rect", { x: 0, y: 0, width, height, fill: "transparent" }));
  box.append(svg("line", { class: "axis", x1: PAD.left, x2: width - PAD.right, y1: y(0), y2: y(0) }));
  for (const v of [0, peak / 2, peak]) {
    const t = svg("text", { x: PAD.left - 6, y: y(v) + 4, "text-anchor": "end" });
    t.textContent = fmt(Math.round(v));
    box.append(t);
  }
  const first = svg("text", { x: PAD.left, y: height - 6 });
  const unit = opts.unit || "request";
  first.textContent = unit + " 1";
  const last = svg("text", { x: width - PAD.right, y: height - 6, "text-anchor": "end" });
  last.textContent = unit + " " + fmt(tokens.length);
  box.append(first, last);
  if (opts.limit) {
    box.append(svg("line", { class: "limit", x1: PAD.left, x2: width - PAD.right, y1: y(opts.limit), y2: y(opts.limit) }));
  }
  const points = tokens.map((v, i) => `${x(i + 1).toFixed(2)},${y(v).toFixed(2)}`).join(" ");
  box.append(svg("polygon", { class: "area", points: `${x(1)},${y(0)} ${points} ${x(n)},${y(0)}` }));
  box.append(svg("polyline", { class: "tokens", points }));
  // One mark per pixel column: 10,000 requests share about a thousand of them.
  const columns = (requests) => {
    const seen = new Map();
    for (const r of requests || []) { const px = Math.round(x(r)); if (!seen.has(px)) seen.set(px, r); }
    return [...seen.values()];
  };
  for (const r of columns(opts.events)) {
    const cx = x(r), base = y(0);
    box.append(svg("path", { class: "event-mark", "data-request": r, d: `M${cx} ${base + 2} l4 8 h-8 z` }));
  }
  for (const r of columns(opts.breaks)) {
    box.append(svg("circle", { class: "break-mark", "data-request": r, cx: x(r), cy: y(tokens[r - 1]), r: 2.5 }));
  }
  if (opts.onpick) {
    const cursor = svg("line", { class: "cursor", y1: PAD.top, y2: y(0), x1: -10, x2: -10 });
    box.append(cursor);
    box.cursorAt = (i) => { cursor.setAttribute("x1", x(i)); cursor.setAttribute("x2", x(i)); };
    box.onclick = (e) => {
      const rect = box.getBoundingClientRect();
      const px = ((e.clientX - rect.left) * width) / rect.width;
      const i = Math.floor(((px - PAD.left) * n) / plotW) + 1;
      opts.onpick(Math.min(n, Math.max(1, i)));
    };
  }
}

// -- the view of one request -------------------------------------------------------------
function blockNode(block, paths) {
  const kind = block.type || "?";
  let body;
  if (kind === "text") body = block.text;
  else if (kind === "thinking") body = block.thinking;
  else if (kind === "tool_use") body = block.name + " " + JSON.stringify(block.input, null, 1);
  else if (kind === "tool_result") {
    const c = block.content;
    body = typeof c === "string" ? c : Array.isArray(c)
      ? c.map((b) => (b.type === "text" ? b.text : JSON.stringify(b))).join("\n") : JSON.stringify(c);
  } else body = JSON.stringify(block);
  const text = String(body ?? "");
  const marker = paths.some((p) => text.includes(p));
  const head = kind === "tool_result" ? "tool_result " + block.tool_use_id : kind;
  return el("div", { class: "block" + (marker ? " marker" : "") },
    el("div", { class: "kind" }, head), linked(text, paths));
}

function messageNode(message, index, paths) {
  const content = message.content;
  const blocks = typeof content === "string" ? [{ type: "text", text: content }] : content || [];
  return el("div", { class: "message " + message.role },
    el("div", { class: "role" }, `${index + 1}. ${message.role}`),
    ...blocks.map((b) => blockNode(b, paths)));
}

function renderView() {
  const v = state.view;
  if (!v) return;
  $("view-title").textContent = `Request ${fmt(v.request)} of ${fmt(state.summary.tokens.length)}`;
  const events = v.events.map((e) => e.stage).join(", ");
  $("view-facts").textContent = `${fmt(v.tokens)} tokens (the system prompt and tools counted, ` +
    `not shown), ${fmt(v.messages.length)} messages` +
    (v.cache_break ? "; the prompt cache broke here" : "") + (events ? `; events before it: ${events}` : "");
  const box = $("view");
  if ($("raw").checked) box.replaceChildren(linked(JSON.stringify(v.messages, null, 1), v.links));
  else box.replaceChildren(...v.messages.map((m, i) => messageNode(m, i, v.links)));
}

async function showRequest(i) {
  const n = state.summary.tokens.length;
  if (!n) return;
  i = Math.min(n, Math.max(1, i));
  state.request = i;
  $("request-number").value = i;
  const chart = $("chart");
  if (chart.cursorAt) chart.cursorAt(i);
  try {
    const v = await api("view", { id: state.session, request: i });
    if (state.request === i) { state.view = v; renderView(); }
  } catch (error) { $("view-facts").textContent = String(error.message); }
}

async function openArchive(path, lines) {
  const box = $("archive-box");
  box.hidden = false;
  $("archive-path").textContent = path + (lines ? ` lines ${lines[0]}-${lines[1]}` : "");
  const pre = $("archive-text");
  pre.textContent = "loading...";
  try {
    const found = await api("archive", { id: state.session, path });
    if (!lines) pre.textContent = found.text;
    else {
      const all = found.text.split("\n");
      const mark = el("mark", {}, all.slice(lines[0] - 1, lines[1]).join("\n"));
      const head = all.slice(0, lines[0] - 1).join("\n"), tail = all.slice(lines[1]).join("\n");
      pre.replaceChildren(head ? head + "\n" : "", mark, lines[1] < all.length ? "\n" + tail : "");
      requestAnimationFrame(() => { pre.scrollTop = mark.offsetTop - pre.offsetTop - 8; });
    }
  } catch (error) { pre.textContent = String(error.message); }
  box.scrollIntoView({ block: "nearest" });
}

// -- search, events, compare ---------------------------------------------------------------
async function search(offset) {
  const q = $("search-q").value;
  try {
    const page = await api("search", { id: state.session, q, offset: offset || 0 });
    const end = page.offset + page.text.length;
    $("search-facts").textContent = page.hits
      ? `${fmt(page.hits)} match(es); characters ${fmt(page.offset)}-${fmt(end)} of ${fmt(page.total)}`
      : "nothing found in this session's log";
    const hits = page.messages.map((m) => el("button", { type: "button",
      onclick: () => m.first_sent && showRequest(m.first_sent) },
      `message ${m.message}` + (m.first_sent ? `: first sent in request ${m.first_sent}` : "")));
    if (page.next_offset !== null) {
      hits.push(el("button", { type: "button", onclick: () => search(page.next_offset) }, "more"));
    }
    $("search-hits").replaceChildren(...hits);
    $("search-text").replaceChildren(linked(page.text, page.links));
    const first = highlight($("search-text"), q);
    if (first) first.scrollIntoView({ block: "center" });
  } catch (error) {
    $("search-facts").textContent = String(error.message);
  }
}

// The matches of a text query, marked where they are shown (a path or "message N" is not
// searched as text: nothing to mark); the first mark, to scroll to.
function highlight(root, q) {
  const needle = q.trim().toLowerCase();
  if (!needle || /^\s*(?:message\s+|#)\d+\s*$/i.test(q)) return null;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  let first = null;
  for (const node of nodes) {
    const text = node.textContent, lower = text.toLowerCase();
    let at = 0, i = lower.indexOf(needle);
    if (i < 0 || lower.length !== text.length) continue;
    const parts = [];
    for (; i >= 0; i = lower.indexOf(needle, at)) {
      const mark = el("mark", {}, text.slice(i, i + needle.length));
      parts.push(text.slice(at, i), mark);
      first = first || mark;
      at = i + needle.length;
    }
    parts.push(text.slice(at));
    node.replaceWith(...parts);
  }
  return first;
}

function copies(e) {
  const shown = e.paths.map((p, i) => el("div", {}, archiveLink(p, e.shown[i])));
  if (shown.length <= 3) return shown;
  const more = el("button", { type: "button", onclick: (click) => {
    click.stopPropagation(); more.replaceWith(...shown.slice(2)); } }, `+${shown.length - 2} more`);
  return [...shown.slice(0, 2), more];
}

async function loadEvents(offset) {
  const page = await api("events", { id: state.session, offset });
  const body = $("events").tBodies[0];
  if (offset === 0) body.replaceChildren(...eventRows(page.rows));
  else { body.lastChild.remove(); body.append(...eventRows(page.rows)); }
  const end = page.offset + page.rows.length;
  if (end < page.total) {
    body.append(el("tr", {}, el("td", { colspan: 7 }, el("button", { type: "button",
      onclick: () => loadEvents(end) }, `${fmt(page.total - end)} more events`))));
  }
}

function eventRows(events) {
  const rows = events.map((e) => el("tr", { class: "event-row" + (e.undone ? " undone" : ""),
    onclick: () => showRequest(e.request) },
    el("td", { class: "n" }, fmt(e.request)), el("td", {}, e.stage + (e.undone ? " (undone)" : "")),
    el("td", { class: "n" }, fmt(e.before)), el("td", { class: "n" }, fmt(e.after)),
    el("td", { class: "n" }, fmt(e.saved)),
    el("td", {}, e.note, ...(e.when ? [el("div", { class: "when" }, e.when)] : [])),
    el("td", {}, ...copies(e))));
  return rows.length ? rows
    : [el("tr", {}, el("td", { colspan: 7 }, "no compaction events: the whole history was in view"))];
}

async function runCompare() {
  $("compare-facts").textContent = "replaying the session under both policies...";
  try {
    const out = await api("compare", { id: state.session, a: $("policy-a").value,
      b: $("policy-b").value, limit: $("compare-limit").value });
    $("compare-facts").textContent = out.left_out || `replayed offline at a limit of ${fmt(out.limit)} ` +
      "tokens, extractive summaries, nothing written";
    $("compare").replaceChildren(...out.policies.map((p) => {
      const box = el("div", { class: "policy" }, el("h3", {}, p.policy));
      if (p.error) { box.append(el("p", { class: "error" }, p.error)); return box; }
      const chart = svg("svg", { class: "compare-chart" });
      box.append(el("p", {}, `${fmt(p.passes.length)} passes; final view ${fmt(p.final_view_tokens)} tokens ` +
        `in ${fmt(p.final_view_messages)} messages (uncompacted ${fmt(p.uncompacted_tokens)}; peak ` +
        `${fmt(Math.max(0, ...p.view_tokens))})`), chart);
      const table = el("table", {}, el("tr", {}, ...["turn", "stage", "before", "after", "what"].map((h) => el("th", {}, h))));
      for (const e of p.passes) {
        table.append(el("tr", {}, el("td", { class: "n" }, fmt(e.turn)), el("td", {}, e.stage),
          el("td", { class: "n" }, fmt(e.before)), el("td", { class: "n" }, fmt(e.after)), el("td", {}, e.note)));
      }
      box.append(table);
      requestAnimationFrame(() => drawChart(chart, p.view_tokens,
        { limit: out.limit, height: 160, unit: "turn", events: [...new Set(p.passes.map((e) => e.turn))] }));
      return box;
    }));
  } catch (error) { $("compare-facts").textContent = String(error.message); }
}

// -- the page ----------------------------------------------------------------------------
async function loadSession(id) {
  state.session = id;
  $("facts").textContent = "replaying the session's journal...";
  const s = await api("session", { id });
  state.summary = s;
  const limit = s.limit ? `, limit ${fmt(s.limit)}` : "";
  $("facts").textContent = `${s.session}: ${s.source}; ${fmt(s.logged)} messages, ` +
    `${fmt(s.tokens.length)} requests, ${fmt(s.events)} events, ` +
    `${fmt(s.breaks.length)} cache breaks; largest request ${fmt(Math.max(0, ...s.tokens))} tokens${limit}`;
  drawChart($("chart"), s.tokens, { limit: s.limit, events: s.marks, breaks: s.breaks, onpick: showRequest });
  const events = loadEvents(0);
  $("undo").disabled = !s.events;
  $("undo-facts").textContent = "";
  $("compare-limit").value = s.compare_limit;
  $("compare").replaceChildren();
  $("compare-facts").textContent = "";
  if (DATA) runCompare();
  await Promise.all([events, showRequest(s.tokens.length)]);
}

async function main() {
  const embedded = document.getElementById("cc-data");
  if (embedded) DATA = await unpack(embedded);
  const listed = await api("sessions", {});
  state.token = listed.token || null;
  $("undo").hidden = DATA !== null || !state.token;
  $("undo").onclick = undoNewest;
  const pick = $("session-pick");
  pick.replaceChildren(...listed.sessions.map((s) => el("option", { value: s.id }, `${s.id}  ${s.source}`)));
  const policies = listed.policies || [];
  for (const [id, chosen] of [["policy-a", "default"], ["policy-b", policies.find((p) => p !== "default")]]) {
    $(id).replaceChildren(...policies.map((p) => el("option", { value: p }, p)));
    $(id).value = chosen || policies[0];
    if (DATA) $(id).disabled = true;
  }
  if (DATA) $("compare-limit").disabled = true;
  pick.onchange = () => { location.hash = pick.value; };
  window.onhashchange = () => loadSession(decodeURIComponent(location.hash.slice(1)));
  $("raw").onchange = renderView;
  $("request-number").onchange = (e) => showRequest(Number(e.target.value));
  $("archive-close").onclick = () => { $("archive-box").hidden = true; };
  $("search-form").onsubmit = (e) => { e.preventDefault(); search(0); };
  $("compare-form").onsubmit = (e) => { e.preventDefault(); if (!DATA) runCompare(); };
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT" || !state.summary) return;
    if (e.key === "ArrowLeft") showRequest(state.request - 1);
    if (e.key === "ArrowRight") showRequest(state.request + 1);
  });
  const wanted = decodeURIComponent(location.hash.slice(1)) || listed.selected || (listed.sessions[0] || {}).id;
  if (!wanted) { $("facts").textContent = "no sessions in this store"; return; }
  pick.value = wanted;
  await loadSession(wanted);
  document.body.dataset.ready = Math.round(performance.now()); // ms since navigation began
}

main().catch((error) => { $("facts").textContent = String(error.message); $("facts").className = "error"; });
