// memtree's memory viewer: one page, no build step, no dependency, nothing fetched from elsewhere.
// Safety rule: memory content reaches the DOM only as text (textContent / createTextNode), never as
// HTML; the Markdown renderer below builds elements itself. The server's CSP forbids inline script.
"use strict";

const POLL_MS = 1500; // how often the page asks whether anything changed (a file edited on disk, a write)
const PAGE = 100; // cards asked for at a time
const FOLD_LINES = 6; // longer entries show their first lines and a button to unfold
const KINDS = ["fact", "preference", "entity", "decision", "unclassified"];
const TOAST_MS = { ok: 4000, warn: 10000, error: 10000 }; // a message stays this long unless dismissed
const META = /\s*<!--\s*memtree:[^]*?-->/g; // an entry's metadata comment: not shown in a note's view
const EXPIRED = "This viewer session has expired (the daemon restarted, or the link was used twice). "
  + "Run `memtree view` in a terminal for a new link; until then nothing can be changed from this page.";

const state = {
  version: null, view: "entries", kind: "", bank: "", node: "", loaded: 0, total: 0,
  editing: 0, stale: false, banks: [], nodes: [], query: "", searchBank: "", asOf: "", now: Date.now(),
  conflicts: [], note: null, back: { view: "entries", y: 0 }, focusConflict: "", expired: false,
};
const $ = (id) => document.getElementById(id);

// --- DOM helpers: text only ----------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return node;
}

const nfc = (s) => String(s ?? "").normalize("NFC");

// --- Markdown, safely: blocks and inline marks built as elements -----------------------------------

const INLINE = /(`+)([^`]*?)\1|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|~~([^~]+)~~|!?\[([^\]]*)\]\(([^)\s]*)[^)]*\)|<(https?:\/\/[^>\s]+)>|\[\[([^\[\]|#\n]+)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]/g;

function inline(text, parent) {
  let last = 0;
  const pattern = new RegExp(INLINE); // one per call: inline() recurses into bold and emphasis
  for (let m; (m = pattern.exec(text)); ) {
    if (m.index > last) parent.append(document.createTextNode(text.slice(last, m.index)));
    if (m[1] !== undefined) parent.append(el("code", { text: m[2] }));
    else if (m[3] !== undefined || m[4] !== undefined) parent.append(inlineInto(el("strong"), m[3] ?? m[4]));
    else if (m[5] !== undefined) parent.append(inlineInto(el("em"), m[5]));
    else if (m[6] !== undefined) parent.append(inlineInto(el("del"), m[6]));
    else if (m[8] !== undefined) {
      // links are shown as text, never followed: the label, then where it points
      parent.append(el("span", { class: "link", text: m[7] || m[8] }));
      if (m[7] && m[8]) parent.append(el("span", { class: "link-target", text: ` (${m[8]})` }));
    } else if (m[9] !== undefined) parent.append(el("span", { class: "link", text: m[9] }));
    else if (m[10] !== undefined) {
      // [[note#entry|alias]]: memtree's own links between notes, followed inside the viewer
      const [note, anchor] = [m[10].trim(), (m[11] || "").trim()];
      const label = (m[12] || "").trim() || (anchor ? `${note}#${anchor}` : note);
      parent.append(el("a", { class: "wikilink", href: "#", "data-note": note, "data-anchor": anchor, text: label,
        onclick: (ev) => { ev.preventDefault(); followLink(note, anchor).catch(fail); } }));
    }
    last = pattern.lastIndex;
    if (m[0].length === 0) pattern.lastIndex++;
  }
  if (last < text.length) parent.append(document.createTextNode(text.slice(last)));
  return parent;
}

function inlineInto(node, text) {
  return inline(text, node);
}

function inlineLines(lines, parent) {
  lines.forEach((line, i) => {
    if (i) parent.append(el("br"));
    inline(line, parent);
  });
  return parent;
}

const LIST = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

function cells(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  return s.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

// ``first`` > 0: the source's first line number; each block (and list item) then carries the lines it
// came from as data-line / data-end, so a note's view can find an entry's place in it.
function renderMarkdown(source, first = 0) {
  const out = document.createDocumentFragment();
  const lines = nfc(source).replace(/\r\n?/g, "\n").split("\n");
  const at = (node, from, to) => {
    if (first) { node.dataset.line = String(first + from); node.dataset.end = String(first + to); }
    return node;
  };
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const start = i;
    if (!line.trim()) { i++; continue; }
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+-]*)/);
    if (fence) {
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i++;
      const code = el("code", { text: body.join("\n") });
      if (fence[2]) code.dataset.lang = fence[2];
      out.append(at(el("pre", { tabindex: "0" }, code), start, Math.min(i, lines.length) - 1));
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*?)\s*#*\s*$/);
    if (heading) {
      const level = Math.min(6, heading[1].length + 2);
      out.append(at(inline(heading[2], el(`h${level}`, { class: "md-heading" })), start, start));
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { out.append(el("hr")); i++; continue; }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      const head = cells(line);
      const table = el("table", { class: "md-table" });
      table.append(el("thead", {}, el("tr", {}, ...head.map((c) => inline(c, el("th", { scope: "col" }))))));
      const tbody = el("tbody");
      i += 2;
      while (i < lines.length && lines[i].includes("|") && lines[i].trim()) {
        tbody.append(at(el("tr", {}, ...cells(lines[i]).map((c) => inline(c, el("td")))), i, i));
        i++;
      }
      table.append(tbody);
      out.append(at(el("div", { class: "table-wrap", tabindex: "0" }, table), start, i - 1));
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
      const q = at(el("blockquote"), start, i - 1);
      q.append(renderMarkdown(quoted.join("\n"), first ? first + start : 0));
      out.append(q);
      continue;
    }
    if (LIST.test(line)) {
      const stack = [];
      while (i < lines.length && lines[i].trim()) {
        const m = lines[i].match(LIST);
        if (!m) {
          // a continuation line of the item above
          const item = stack.length ? stack[stack.length - 1].list.lastElementChild : null;
          if (item) { item.append(el("br")); inline(lines[i].trim(), item); if (first) item.dataset.end = String(first + i); }
          i++;
          continue;
        }
        const indent = m[1].replace(/\t/g, "    ").length;
        const ordered = /\d/.test(m[2]);
        while (stack.length && indent < stack[stack.length - 1].indent) stack.pop();
        let top = stack[stack.length - 1];
        if (!top || indent > top.indent) {
          const list = el(ordered ? "ol" : "ul");
          if (ordered && parseInt(m[2], 10) !== 1) list.setAttribute("start", parseInt(m[2], 10));
          if (top && top.list.lastElementChild) top.list.lastElementChild.append(list);
          else out.append(list);
          top = { indent, list };
          stack.push(top);
        }
        const task = m[3].match(/^\[([ xX])\]\s+(.*)$/);
        const li = at(el("li"), i, i);
        if (task) li.append(el("span", { class: "task", text: task[1] === " " ? "☐ " : "☑ " }));
        inline(task ? task[2] : m[3], li);
        top.list.append(li);
        i++;
      }
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !LIST.test(lines[i]) && !/^(#{1,6})\s|^\s*(```|~~~)|^\s*>/.test(lines[i])) {
      para.push(lines[i++]);
    }
    if (!para.length) para.push(lines[i++]);
    out.append(at(inlineLines(para, el("p")), start, i - 1));
  }
  return out;
}

function highlight(root, terms) {
  const words = [...new Set(terms.map(nfc).filter((t) => t.length > 0))].sort((a, b) => b.length - a.length);
  if (!words.length) return;
  const pattern = new RegExp(words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "gi");
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const text = node.nodeValue;
    pattern.lastIndex = 0;
    if (!pattern.test(text)) continue;
    pattern.lastIndex = 0;
    const frag = document.createDocumentFragment();
    let last = 0;
    for (let m; (m = pattern.exec(text)); ) {
      if (m.index > last) frag.append(document.createTextNode(text.slice(last, m.index)));
      frag.append(el("mark", { text: m[0] }));
      last = pattern.lastIndex;
    }
    frag.append(document.createTextNode(text.slice(last)));
    node.replaceWith(frag);
  }
}

// --- talking to the daemon -------------------------------------------------------------------------

class CallError extends Error {
  constructor(message, status) { super(message); this.status = status; }
}

async function call(verb, args = {}) {
  const response = await fetch(`api/call/${verb}`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-Memtree-View": "1" },
    body: JSON.stringify(args),
  });
  const doc = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok || (doc && doc.error && doc.kind)) {
    if (response.status === 401) expire();
    throw new CallError(doc.error || `HTTP ${response.status}`, response.status);
  }
  return doc;
}

async function startSession() {
  const m = location.hash.match(/code=([A-Za-z0-9_-]+)/);
  if (!m) return;
  history.replaceState(null, "", location.pathname + location.search); // the code leaves the address bar
  await fetch("api/session", {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json" }, body: JSON.stringify({ code: m[1] }),
  }).catch(() => null);
}

// --- small UI pieces --------------------------------------------------------------------------------

// Messages sit in the tab bar's status line (kept in the layout, so nothing under it moves or is
// covered), for a few seconds or until dismissed.
let toastTimer = 0;
function toast(message, kind = "ok") {
  const t = $("toast");
  $("toast-text").textContent = message;
  $("toast-text").title = message;
  t.dataset.kind = kind;
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(dismissToast, TOAST_MS[kind] || TOAST_MS.ok);
}

function dismissToast() {
  clearTimeout(toastTimer);
  $("toast").hidden = true;
}

// The session is gone (401): say so and how to get a new one, and disable every control that writes.
function expire() {
  showNotice(EXPIRED);
  if (state.expired) return;
  state.expired = true;
  document.body.dataset.expired = "1";
  const why = "The viewer session has expired: run `memtree view` for a new link";
  for (const id of ["add-button", "undo-button", "export-button", "import-file"]) {
    $(id).disabled = true;
    $(id).title = why;
  }
  $("import-label").setAttribute("aria-disabled", "true");
  $("import-label").title = why;
  disableWrites();
}

function disableWrites() {
  if (!state.expired) return;
  for (const c of document.querySelectorAll("main .card-actions button, main .switch input")) c.disabled = true;
}

function showNotice(message) {
  const n = $("notice");
  n.textContent = message;
  n.hidden = false;
}

function fail(error) {
  toast(`Error: ${error.message || error}`, "error");
}

const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
function relative(iso) {
  if (!iso) return "";
  const seconds = (new Date(iso).getTime() - state.now) / 1000;
  const steps = [[60, "second"], [3600, "minute"], [86400, "hour"], [86400 * 30, "day"], [86400 * 365, "month"], [Infinity, "year"]];
  const sizes = { second: 1, minute: 60, hour: 3600, day: 86400, month: 86400 * 30, year: 86400 * 365 };
  for (const [limit, unit] of steps) {
    if (Math.abs(seconds) < limit) return RELATIVE.format(Math.round(seconds / sizes[unit]), unit);
  }
  return "";
}

function timeEl(iso) {
  if (!iso) return null;
  return el("time", { datetime: iso, title: new Date(iso).toLocaleString() }, relative(iso));
}

// A modal built from parts; resolves with the value of the button pressed (or "" when dismissed).
function ask(title, body, buttons) {
  const dialog = $("dialog");
  $("dialog-title").textContent = title;
  const holder = $("dialog-body");
  holder.replaceChildren(...[].concat(body).filter(Boolean));
  const actions = $("dialog-actions");
  actions.replaceChildren();
  return new Promise((resolve) => {
    const done = (value) => { dialog.close(); resolve(value); };
    for (const b of buttons) {
      actions.append(el("button", { type: "button", class: b.primary ? "primary" : (b.danger ? "danger" : ""), "data-value": b.value, onclick: () => done(b.value) }, b.label));
    }
    dialog.onclose = () => resolve("");
    dialog.showModal();
    const first = holder.querySelector("textarea, input, select") || actions.querySelector(".primary, .danger") || actions.firstChild;
    if (first) first.focus();
  });
}

function field(label, control) {
  const id = control.id || `f-${Math.random().toString(36).slice(2)}`;
  control.id = id;
  return el("div", { class: "field" }, el("label", { for: id, text: label }), control);
}

// --- a card --------------------------------------------------------------------------------------------

function badge(text, cls, label) {
  return el("span", { class: `badge ${cls}`, title: label || null }, text);
}

function renderBody(content, folded) {
  const lines = nfc(content).split("\n");
  const body = el("div", { class: "md", lang: /[\uac00-\ud7a3]/.test(content) ? "ko" : null });
  body.append(renderMarkdown(folded ? lines.slice(0, FOLD_LINES).join("\n") : content));
  return body;
}

function card(entry) {
  const lines = nfc(entry.content).split("\n");
  const long = lines.length > FOLD_LINES;
  const item = el("li", { class: "card", tabindex: "0", "data-id": entry.id || "", "data-path": entry.path, "data-line": entry.lines[0] });
  item.sideKey = sideKey(entry.path, entry.content);
  const head = el("div", { class: "card-head" },
    badge(entry.source, `source-${entry.source}`, entry.source === "auto" ? "written by distill or ingest" : "written by a person or an agent's add"),
    entry.kind ? badge(entry.kind, `kind kind-${entry.kind}`, "kind") : null,
    entry.scope && entry.scope !== "global" ? badge(entry.scope, "scope", "scope") : null,
    entry.why ? badge("archive candidate", "candidate", entry.why) : null,
    el("span", { class: "grow" }),
    timeEl(entry.changed_at),
  );
  let body = renderBody(entry.content, long);
  const parts = [head, body];
  if (long) {
    const toggle = el("button", { type: "button", class: "link-button fold", "aria-expanded": "false" }, `Show all ${lines.length} lines`);
    toggle.addEventListener("click", () => {
      const open = toggle.getAttribute("aria-expanded") !== "true";
      const fresh = renderBody(entry.content, !open);
      body.replaceWith(fresh);
      body = fresh;
      toggle.setAttribute("aria-expanded", String(open));
      toggle.textContent = open ? "Show less" : `Show all ${lines.length} lines`;
    });
    parts.push(toggle);
  }
  if (entry.tags.length) parts.push(el("div", { class: "tags" }, ...entry.tags.map((t) => el("span", { class: "tag" }, `#${nfc(t)}`))));
  const where = `${entry.path}:${entry.lines[0]}${entry.lines[1] !== entry.lines[0] ? `-${entry.lines[1]}` : ""}`;
  parts.push(el("div", { class: "meta" },
    entry.node ? el("span", { title: "tree node" }, entry.node) : el("span", {}, "no node"),
    el("span", { class: "path", title: "file and lines" }, where),
    el("span", { title: "decay weight today" }, `weight ${entry.weight.toFixed(2)}`),
    el("span", { title: "search recalls" }, `${entry.recall_count} recall${entry.recall_count === 1 ? "" : "s"}`),
    el("span", { title: "scope" }, `scope ${entry.scope}`),
    entry.id ? el("span", { class: "id" }, entry.id) : el("span", {}, "hand-written"),
  ));
  const ref = entry.id || `${entry.path}:${entry.lines[0]}`;
  parts.push(el("div", { class: "card-actions" },
    el("button", { type: "button", class: "edit", "aria-label": `Edit entry at ${where}`, onclick: () => editCard(item, entry, ref) }, "Edit"),
    el("button", { type: "button", class: "forget danger", "aria-label": `Forget entry at ${where}`, onclick: () => forgetEntry(entry, ref) }, "Forget"),
    el("button", { type: "button", class: "open-note", "aria-label": `Open ${entry.path} at line ${entry.lines[0]}`, onclick: () => openNote(entry.path, entry.lines) }, "Open note"),
  ));
  item.append(...parts);
  markConflict(item);
  return item;
}

function describe(doc) {
  const where = doc.path ? ` in ${doc.path}${doc.lines ? `:${doc.lines[0]}` : ""}` : "";
  switch (doc.decision) {
    case "created": return `Created${where}`;
    case "updated": return `Updated${where}`;
    case "unchanged": return `Unchanged: the entry already says that`;
    case "merged": return `Merged into ${doc.entry_id || "an existing entry"}${where} (similarity ${(doc.similarity ?? 0).toFixed(2)})`;
    case "duplicate": return `Duplicate of ${doc.existing || "an existing entry"}${where}: nothing written`;
    case "conflict": return `Conflict${where}: written and recorded as ${doc.conflict_id || "a conflict"} — it may contradict “${nfc(doc.other || "").slice(0, 80)}”`;
    default: return `Done${where}`;
  }
}

function editCard(item, entry, ref) {
  if (item.querySelector("textarea")) return;
  state.editing++;
  const area = el("textarea", { rows: Math.min(14, Math.max(3, entry.content.split("\n").length + 1)), class: "editor" });
  area.value = nfc(entry.content);
  const box = el("div", { class: "edit-box" });
  const finish = () => { box.remove(); item.classList.remove("editing"); state.editing--; if (state.stale) refresh(); };
  const save = async () => {
    const text = area.value.trim();
    if (!text) { toast("An entry cannot be empty: forget it instead", "error"); return; }
    const answer = await ask("Save this change?", [
      el("p", { text: "The entry's words become:" }), el("blockquote", { class: "preview", text }),
      el("p", { class: "hint", text: "It is checked for duplicates and conflicts; its metadata is kept. Undo restores it." }),
    ], [{ label: "Save", value: "save", primary: true }, { label: "Cancel", value: "" }]);
    if (answer !== "save") { area.focus(); return; }
    try {
      const doc = await call("update", { ref, text });
      toast(describe(doc), doc.decision === "conflict" || doc.decision === "duplicate" ? "warn" : "ok");
      finish();
      await refresh(true);
    } catch (e) { fail(e); }
  };
  area.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") { ev.preventDefault(); finish(); item.focus(); }
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); save(); }
  });
  box.append(field("Entry text (Ctrl+Enter saves, Esc cancels)", area), el("div", { class: "card-actions" },
    el("button", { type: "button", class: "primary save", onclick: save }, "Save"),
    el("button", { type: "button", onclick: () => { finish(); item.focus(); } }, "Cancel"),
  ));
  item.classList.add("editing");
  item.append(box);
  area.focus();
}

async function forgetEntry(entry, ref) {
  const reason = el("input", { type: "text", maxlength: "200", placeholder: "optional" });
  const answer = await ask("Forget this entry?", [
    el("blockquote", { class: "preview", text: nfc(entry.content).slice(0, 400) }),
    el("p", { class: "hint", text: `It moves, metadata and all, to bank/_archive/ (never deleted, never searched). Undo brings it back.` }),
    field("Reason", reason),
  ], [{ label: "Forget", value: "forget", danger: true }, { label: "Cancel", value: "" }]);
  if (answer !== "forget") return;
  try {
    const doc = await call("forget", { ref, reason: reason.value.trim() });
    toast(`Forgotten: archived in ${doc.archive}`);
    await refresh(true);
  } catch (e) { fail(e); }
}

// --- the entries list --------------------------------------------------------------------------------

let firstPaint = true;
async function loadEntries(reset) {
  const list = $("cards");
  const offset = reset ? 0 : state.loaded;
  const limit = reset ? Math.max(PAGE, state.loaded) : PAGE;
  const doc = await call("entries", { offset, limit, kind: state.kind || null, bank: state.bank || null, node: state.node || null });
  if (reset && state.editing) { state.stale = true; return; } // an open editor is never re-rendered away
  state.now = new Date(doc.generated_at).getTime() || Date.now();
  const made = doc.entries.map(card);
  if (reset) {
    const focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement.closest(".card") : null;
    const key = focused ? `${focused.dataset.path}:${focused.dataset.line}` : null;
    list.replaceChildren(...made);
    if (key) {
      const again = [...list.children].find((c) => `${c.dataset.path}:${c.dataset.line}` === key);
      if (again) again.focus({ preventScroll: true });
    }
    state.loaded = made.length;
  } else {
    list.append(...made);
    state.loaded += made.length;
  }
  state.total = doc.total_count;
  disableWrites();
  $("entry-count").textContent = `(${doc.entry_count})`;
  $("list-summary").textContent = `${doc.total_count} entr${doc.total_count === 1 ? "y" : "ies"}${state.loaded < doc.total_count ? `, ${state.loaded} shown` : ""}`;
  $("more").hidden = state.loaded >= doc.total_count;
  const kinds = $("kind-filter");
  const chosen = kinds.value;
  kinds.replaceChildren(el("option", { value: "" }, "all kinds"),
    ...KINDS.map((k) => el("option", { value: k }, `${k} (${doc.kinds[k] || 0})`)));
  kinds.value = chosen;
  if (firstPaint) {
    firstPaint = false;
    requestAnimationFrame(() => {
      performance.mark("memtree:first-cards");
      document.body.dataset.ready = "1";
    });
  }
}

// --- search ------------------------------------------------------------------------------------------

async function search(query, bank) {
  state.query = query;
  state.searchBank = bank;
  if (!query) { clearSearch(); return; }
  const asOf = state.asOf;
  const doc = await call("explain", { query, k: bank ? 50 : 10, as_of: asOf || null });
  const hits = doc.hits.filter((h) => !bank || h.path.startsWith(`bank/${bank}/`) || h.path === `bank/${bank}.md`);
  const list = $("hits");
  list.replaceChildren(...hits.slice(0, 20).map((h, n) => hitCard(h, n + 1)));
  $("search-results").hidden = false;
  $("entries-toolbar").hidden = true;
  $("cards").hidden = true;
  $("more").hidden = true;
  const why = doc.rejected ? ` — ${doc.rejected}` : "";
  const when = asOf ? `, as of ${asOf}` : "";
  $("search-summary").textContent = `${hits.length} result${hits.length === 1 ? "" : "s"} for “${nfc(query)}”${bank ? ` in ${bank}` : ""}${when}${why}`;
}

function hitCard(hit, rank) {
  const past = hit.status && hit.status !== "current"; // superseded, expired or not yet: search marks it so
  const item = el("li", { class: past ? "card hit past-hit" : "card hit", tabindex: "0", "data-path": hit.path, "data-line": hit.lines[0], "data-ids": (hit.ids || []).join(" "), "data-status": hit.status || "current" });
  item.sideKey = sideKey(hit.path, hit.text || "");
  const body = el("div", { class: "md" });
  body.append(renderMarkdown(hit.text || ""));
  highlight(body, hit.matched || []);
  const explain = el("details", { class: "explain" },
    el("summary", {}, "Explain score"),
    el("pre", { text: hit.explain || "" }),
    el("p", { text: `matched: ${(hit.matched || []).join(", ") || "—"}${hit.route && hit.route.length ? `; routed by keywords: ${hit.route.join(", ")}` : ""}` }),
  );
  item.append(
    el("div", { class: "card-head" }, el("span", { class: "rank" }, `${rank}.`), badge(hit.tier, "tier"),
      past ? badge(hit.status, "past", "no longer current: shown because nothing current answers") : null,
      el("span", { class: "score" }, `score ${hit.score.toFixed(3)}`)),
    body,
    el("div", { class: "meta" }, el("span", {}, hit.node || "no node"), el("span", { class: "path" }, `${hit.path}:${hit.lines[0]}-${hit.lines[1]}`), ...(hit.ids || []).map((i) => el("span", { class: "id" }, i))),
    explain,
    el("div", { class: "card-actions" },
      el("button", { type: "button", class: "open-note", "aria-label": `Open ${hit.path} at line ${hit.lines[0]}`, onclick: () => openNote(hit.path, hit.lines) }, "Open in note")),
  );
  markConflict(item);
  return item;
}

// The day search answers for ("" : now): the facts that held then (search's --as-of).
function setAsOf(day) {
  state.asOf = day || "";
  $("search-as-of").value = state.asOf;
  $("clear-as-of").hidden = !state.asOf;
  if (state.query) search(state.query, state.searchBank).catch(fail);
}

function clearSearch() {
  state.query = "";
  $("search-query").value = "";
  $("search-results").hidden = true;
  $("entries-toolbar").hidden = false;
  $("cards").hidden = false;
  $("more").hidden = state.loaded >= state.total;
}

// --- add, undo, import, export -------------------------------------------------------------------

async function addEntry() {
  const text = el("textarea", { rows: "5", required: true, class: "editor" });
  const kind = el("select", {}, el("option", { value: "" }, "unclassified"), ...KINDS.slice(0, 4).map((k) => el("option", { value: k }, k)));
  kind.value = "fact";
  const tags = el("input", { type: "text", placeholder: "comma, separated" });
  const to = el("input", { type: "text", list: "node-list", placeholder: "automatic" });
  const scope = el("input", { type: "text", value: "global" });
  const nodes = el("datalist", { id: "node-list" }, ...state.nodes.filter((n) => n.path).map((n) => el("option", { value: n.id })));
  const outcome = el("p", { class: "outcome", "aria-live": "polite" });
  const args = () => ({ text: text.value.trim(), kind: kind.value || "", tags: tags.value, to: to.value.trim() || null, scope: scope.value.trim() || "global" });
  const body = [field("What to remember", text), el("div", { class: "row" }, field("Kind", kind), field("Tags", tags)),
    el("div", { class: "row" }, field("Note (node)", to), field("Scope", scope)), nodes, outcome];
  let answer = await ask("Add to memory", body, [{ label: "Check", value: "check", primary: true }, { label: "Cancel", value: "" }]);
  while (answer === "check") {
    if (!text.value.trim()) { outcome.textContent = "Write something first."; }
    else {
      try {
        const dry = await call("add", { ...args(), dry_run: true });
        outcome.textContent = `Would be: ${describe(dry)}`;
        answer = await ask("Add to memory", body, [{ label: dry.decision === "duplicate" ? "Nothing to write" : "Remember", value: dry.decision === "duplicate" ? "" : "write", primary: true }, { label: "Check again", value: "check" }, { label: "Cancel", value: "" }]);
        continue;
      } catch (e) { outcome.textContent = `Error: ${e.message}`; }
    }
    answer = await ask("Add to memory", body, [{ label: "Check", value: "check", primary: true }, { label: "Cancel", value: "" }]);
  }
  if (answer !== "write") return;
  try {
    const doc = await call("add", args());
    toast(describe(doc), doc.decision === "conflict" || doc.decision === "duplicate" ? "warn" : "ok");
    await refresh(true);
  } catch (e) { fail(e); }
}

async function undoLast() {
  try {
    const dry = await call("undo", { count: 1, dry_run: true });
    const c = dry.undone[0];
    if (!c) { toast("Nothing to undo"); return; }
    const answer = await ask("Undo the last change?", [
      el("p", {}, `${c.command}: `, el("q", { text: nfc(c.summary) })),
      el("p", { class: "hint" }, timeEl(c.time) || "", ` · ${c.paths.join(", ")}`),
    ], [{ label: "Undo", value: "undo", primary: true }, { label: "Cancel", value: "" }]);
    if (answer !== "undo") return;
    const doc = await call("undo", { count: 1 });
    toast(`Undone: ${doc.undone.map((u) => `${u.command} ${nfc(u.summary)}`).join("; ")}`);
    await refresh(true);
  } catch (e) { fail(e); }
}

async function exportAll() {
  try {
    const doc = await call("export", {});
    const blob = new Blob([JSON.stringify(doc, null, 2)], { type: "application/json" });
    const url = URL.createObjectURL(blob);
    const a = el("a", { href: url, download: `memtree-export-${new Date().toISOString().slice(0, 10)}.json` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    toast(`Exported ${doc.entries.length} entries and ${Object.keys(doc.files || {}).length} files`);
  } catch (e) { fail(e); }
}

async function importFile(file) {
  let document_;
  try { document_ = JSON.parse(await file.text()); } catch (e) { toast(`${file.name} is not JSON`, "error"); return; }
  try {
    const dry = await call("import", { document: document_, dry_run: true });
    const answer = await ask(`Import ${file.name}?`, [
      el("p", { text: `${dry.written_count} entries would be written, ${dry.skipped_count} skipped (already there); ${dry.restored.length} files restored whole; ${dry.nodes_added.length} nodes and ${dry.added_conflict_count} conflicts added.` }),
      el("p", { class: "hint", text: "Nothing existing is replaced. Undo reverts the import." }),
    ], [{ label: "Import", value: "import", primary: true }, { label: "Cancel", value: "" }]);
    if (answer !== "import") return;
    const doc = await call("import", { document: document_ });
    toast(`Imported: ${doc.written_count} written, ${doc.skipped_count} skipped`);
    await refresh(true);
  } catch (e) { fail(e); }
}

// --- conflicts, banks, tree, status ------------------------------------------------------------------

// A hand-written side has no id: it is known by its note and its words.
function sideKey(path, text) {
  return `${path}\n${nfc(text).replace(META, "").replace(/^\s*[-*+]\s+/, "").trim()}`;
}

function conflictFor(item) {
  const ids = [item.dataset.id, ...(item.dataset.ids || "").split(" ")].filter(Boolean);
  for (const c of state.conflicts) {
    for (const s of [c.new, c.old]) {
      if (s.id ? ids.includes(s.id) : sideKey(s.path, s.text) === item.sideKey) return c.id;
    }
  }
  return "";
}

// An entry (or hit) in an open conflict carries a mark that opens the conflict.
function markConflict(item) {
  const id = conflictFor(item);
  const old = item.querySelector(".conflict-mark");
  if (old && old.dataset.conflict === id) return;
  if (old) old.remove();
  if (!id) return;
  const mark = el("button", { type: "button", class: "badge conflict-mark", "data-conflict": id,
    "aria-label": `In open conflict ${id}: show it`, onclick: () => showConflict(id) }, `conflict ${id}`);
  const head = item.querySelector(".card-head");
  head.insertBefore(mark, head.querySelector(".grow") || null);
}

function showConflict(id) {
  state.focusConflict = id;
  show("conflicts");
}

function side(title, s) {
  return el("div", { class: "side" }, el("h3", { text: title }),
    el("div", { class: "md" }, renderMarkdown(s.text)),
    el("p", { class: "meta" }, el("span", { class: "path" }, s.path), s.id ? el("span", { class: "id" }, s.id) : el("span", {}, "hand-written")));
}

async function loadConflicts() {
  const doc = await call("conflicts", {});
  state.conflicts = doc.conflicts;
  for (const item of document.querySelectorAll(".cards > .card")) markConflict(item);
  $("conflict-count").textContent = doc.conflicts.length ? `(${doc.conflicts.length})` : "";
  const holder = $("conflicts");
  if (!doc.conflicts.length) { holder.replaceChildren(el("p", { class: "empty", text: "No open conflicts." })); return; }
  holder.replaceChildren(...doc.conflicts.map((c) => {
    const resolve = async (keep) => {
      const what = { new: "Keep the new entry; the old one's text is removed.", old: "Keep the old entry; the new one's text is removed.", both: "Keep both; the conflict is closed." }[keep];
      const answer = await ask(`Resolve ${c.id}?`, [el("p", { text: what }), el("p", { class: "hint", text: "Undo reverts it." })],
        [{ label: `Keep ${keep}`, value: keep, primary: true }, { label: "Cancel", value: "" }]);
      if (answer !== keep) return;
      try {
        const done = await call("resolve_conflict", { id: c.id, keep });
        toast(`${c.id}: ${done.outcome}`);
        await refresh(true);
      } catch (e) { fail(e); }
    };
    return el("article", { class: "conflict", tabindex: "-1", "data-conflict": c.id, "aria-label": `Conflict ${c.id}` },
      el("p", { class: "meta" }, el("span", { class: "id" }, c.id), el("span", {}, `similarity ${c.similarity.toFixed(2)}`), timeEl(c.created_at)),
      el("div", { class: "sides" }, side("New", c.new), side("Old", c.old)),
      el("div", { class: "card-actions" },
        el("button", { type: "button", onclick: () => resolve("new") }, "Keep new"),
        el("button", { type: "button", onclick: () => resolve("old") }, "Keep old"),
        el("button", { type: "button", onclick: () => resolve("both") }, "Keep both")));
  }));
  disableWrites();
  const wanted = state.focusConflict && holder.querySelector(`[data-conflict="${CSS.escape(state.focusConflict)}"]`);
  if (wanted && state.view === "conflicts") {
    state.focusConflict = "";
    for (const a of holder.querySelectorAll(".here")) a.classList.remove("here");
    wanted.classList.add("here");
    wanted.scrollIntoView({ block: "start" });
    wanted.focus({ preventScroll: true });
  }
}

async function loadBanks() {
  const doc = await call("banks", {});
  state.banks = doc.banks;
  $("banks").replaceChildren(...doc.banks.map((b) => {
    const id = `bank-switch-${b.name}`;
    const box = el("input", { type: "checkbox", role: "switch", id, checked: b.enabled, "aria-label": `Search bank ${b.name}` });
    box.addEventListener("change", async () => {
      try {
        const done = await call("set_bank", { name: b.name, enabled: box.checked });
        toast(`${done.bank} is ${done.enabled ? "searched again" : "left out of search"}`);
        await refresh(true);
      } catch (e) { box.checked = !box.checked; fail(e); }
    });
    return el("tr", {}, el("th", { scope: "row" }, b.name), el("td", {}, String(b.note_count)), el("td", {}, String(b.entry_count)),
      el("td", {}, b.bytes.toLocaleString()), el("td", {}, el("label", { class: "switch", for: id }, box, el("span", { text: b.enabled ? "on" : "off" }))));
  }));
  disableWrites();
  for (const id of ["bank-filter", "search-bank"]) {
    const select = $(id);
    const chosen = select.value;
    select.replaceChildren(el("option", { value: "" }, "all banks"), ...doc.banks.map((b) => el("option", { value: b.name }, `${b.name} (${b.entry_count})${b.enabled ? "" : " — off"}`)));
    select.value = chosen;
  }
}

async function loadTree() {
  const doc = await call("tree", {});
  state.nodes = doc.nodes;
  const byId = new Map(doc.nodes.map((n) => [n.id, n]));
  const build = (n) => el("li", {},
    el("div", { class: "node" },
      n.path ? el("button", { type: "button", class: "link-button", "aria-label": `Show the entries of ${n.id}`, onclick: () => filterNode(n.id) }, n.id) : el("strong", {}, n.id),
      n.path ? el("span", { class: "path" }, n.path) : null,
      el("span", { class: "keywords" }, ...n.keywords.map((k) => el("span", { class: "chip" }, nfc(k))))),
    n.children.length ? el("ul", {}, ...n.children.map((c) => byId.get(c)).filter(Boolean).map(build)) : null);
  $("tree").replaceChildren(...doc.nodes.filter((n) => !n.parent || !byId.has(n.parent)).map(build));
}

function filterNode(id) {
  if (state.query) clearSearch();
  state.node = id;
  const chip = $("node-filter");
  chip.hidden = !id;
  chip.replaceChildren(`node ${id} `, el("button", { type: "button", class: "link-button", "aria-label": "Clear the node filter", onclick: () => filterNode("") }, "×"));
  show("entries");
  loadEntries(true).catch(fail);
}

async function loadStatus() {
  const s = await call("status", {});
  const r = s.recall || {};
  const row = (term, ...value) => [el("dt", { text: term }), el("dd", {}, ...value)];
  const budget = Math.max(1, r.budget || 1);
  const c = s.consolidation;
  const w = s.watcher;
  $("root-name").textContent = s.root;
  document.title = `memtree — ${s.root}`;
  $("status").replaceChildren(
    ...row("index", el("span", { class: s.index.fresh ? "ok" : "warn", text: s.index.fresh ? "fresh" : `stale: ${s.index.stale.length} notes changed` }), ` (version ${s.index.version})`),
    ...row("watcher", w ? `${w.alive ? "alive" : "not running"}, last heartbeat ` : "the daemon watches the root (no `memtree watch` heartbeat)", w ? timeEl(w.time) : null),
    ...row("recall/ budget", el("meter", { min: "0", max: String(budget), value: String(r.tokens || 0), high: String(budget * 0.9), "aria-label": "recall tokens used of the budget" }),
      ` ${r.tokens || 0} of ${r.budget || 0} tokens, ${r.excerpt_count || 0} excerpts${r.over_budget ? " — over budget" : ""}`),
    ...row("archive candidates", String(s.archive_candidate_count)),
    ...row("open conflicts", String(s.open_conflict_count)),
    ...row("last consolidation", c ? timeEl(c.finished_at || c.started_at) : "never", c ? ` (${c.merged_count ?? 0} merged${c.error ? `, error: ${c.error}` : ""})` : null),
    ...row("notes", Object.entries(s.tiers).map(([t, v]) => `${t} ${v.file_count}`).join(" · "), ` · ${s.node_count} nodes`),
    ...row("warnings", s.warnings.length ? s.warnings.join("; ") : "none"),
  );
}

async function loadUndo() {
  const h = await call("history", { limit: 1 });
  const b = $("undo-button");
  const c = h.changes[0];
  b.disabled = state.expired || !c;
  b.title = c ? `Undo ${c.command}: ${nfc(c.summary)}` : "Nothing to undo";
  b.setAttribute("aria-label", b.title);
}

// --- a whole note ------------------------------------------------------------------------------------

// A note's view: the whole file through the `get` verb (the daemon's one read path), rendered like a
// card (text only, links not followed, metadata comments left out), scrolled to ``lines`` and marked.
function openNote(path, lines) {
  if (state.view !== "note") state.back = { view: state.view, y: window.scrollY };
  state.note = { path, lines: lines || null };
  show("note");
}

function closeNote() {
  const { view, y } = state.back;
  show(view);
  window.scrollTo(0, y);
  const card = document.querySelector(`section:not([hidden]) .card[data-path="${CSS.escape(state.note.path)}"][data-line="${state.note.lines ? state.note.lines[0] : ""}"]`);
  if (card) card.focus({ preventScroll: true });
}

async function loadNote(opened) {
  const { path, lines } = state.note;
  const doc = await call("get", { ref: path });
  if (state.view !== "note" || state.note.path !== path) return;
  const y = window.scrollY;
  // a metadata comment goes, its line breaks stay: line numbers keep matching the file's
  const text = nfc(doc.text).replace(/\r\n?/g, "\n").replace(META, (m) => m.replace(/[^\n]/g, ""));
  const body = el("div", { class: "md", lang: /[\uac00-\ud7a3]/.test(text) ? "ko" : null });
  const all = text.split("\n");
  let first = 1;
  if (all[0] === "---") { // front matter, shown as it is
    const close = all.indexOf("---", 1);
    if (close > 0) {
      body.append(el("pre", { class: "front-matter", "data-line": "1", "data-end": String(close + 1) }, el("code", { text: all.slice(0, close + 1).join("\n") })));
      first = close + 2;
    }
  }
  body.append(renderMarkdown(all.slice(first - 1).join("\n"), first));
  $("note-title").textContent = doc.path;
  $("note-node").textContent = doc.node ? `node ${doc.node}` : "no node";
  $("note").replaceChildren(body);
  loadBacklinks(doc.path).catch(fail);
  const here = lines ? place(body, lines) : [];
  for (const n of here) n.classList.add("here");
  if (!opened) window.scrollTo(0, y);
  else if (here.length) {
    here[0].setAttribute("tabindex", "-1");
    here[0].scrollIntoView({ block: "center" });
    here[0].focus({ preventScroll: true });
  } else window.scrollTo(0, 0);
}

// A [[link]]: its note, opened at the entry or heading it names (`get` reads a link's target by
// memtree's one rule for naming a note: memtree.notes.links).
async function followLink(note, anchor) {
  const doc = await call("get", { ref: anchor ? `${note}#${anchor}` : note });
  openNote(doc.path, doc.target_line ? [doc.target_line, doc.target_line] : null);
}

// The notes that link to the open one, each a button to its line.
async function loadBacklinks(path) {
  const doc = await call("links", { ref: path });
  if (state.view !== "note" || state.note.path !== path) return;
  const rows = doc.incoming.map((r) => el("li", {},
    el("button", { type: "button", class: "link-button backlink", "aria-label": `Open ${r.source} at line ${r.line}`,
      onclick: () => openNote(r.source, [r.line, r.line]) }, `${r.source}:${r.line}`),
    el("span", { class: "kind", text: ` ${r.kind === "link" ? "" : r.kind} ` })));
  $("backlinks").replaceChildren(el("h3", { text: rows.length ? `Linked from ${rows.length} place${rows.length > 1 ? "s" : ""}` : "No note links here" }),
    rows.length ? el("ul", {}, ...rows) : null);
}

// The outermost rendered blocks whose source lines overlap [from, to].
function place(body, [from, to]) {
  const overlapping = [...body.querySelectorAll("[data-line]")].filter((n) => +n.dataset.line <= to && +n.dataset.end >= from);
  return overlapping.filter((n) => !overlapping.some((o) => o !== n && o.contains(n)));
}

// --- views, live updates, keys -----------------------------------------------------------------------

function show(view) {
  state.view = view;
  for (const b of document.querySelectorAll(".tabs button[data-view]")) {
    if (b.dataset.view === view) b.setAttribute("aria-current", "page"); else b.removeAttribute("aria-current");
  }
  for (const s of document.querySelectorAll("main section")) s.hidden = s.dataset.section !== view;
  refreshView(true).catch(fail);
}

async function refreshView(opened = false) {
  if (state.view === "note") await loadNote(opened);
  else if (state.view === "conflicts") await loadConflicts();
  else if (state.view === "banks") await loadBanks();
  else if (state.view === "tree") await loadTree();
  else if (state.view === "status") await loadStatus();
}

async function refresh(force) {
  if (state.editing && !force) { state.stale = true; return; }
  state.stale = false;
  const jobs = [loadEntries(true), loadUndo(), loadConflicts(), loadBanks(), refreshView()];
  if (state.query) jobs.push(search(state.query, state.searchBank));
  await Promise.all(jobs);
  const v = await call("version", {});
  state.version = v.version;
}

let polling = false;
async function poll() {
  if (polling || document.hidden) return;
  polling = true;
  try {
    const v = await call("version", {});
    $("live").dataset.state = "ok";
    if (state.version !== null && v.version !== state.version) {
      state.version = v.version;
      await refresh(false);
    }
    state.version = v.version;
  } catch (e) {
    $("live").dataset.state = "down";
  } finally {
    polling = false;
  }
}

function moveFocus(step) {
  const cards = [...document.querySelectorAll(".cards:not([hidden]) > .card")].filter((c) => c.offsetParent !== null);
  if (!cards.length) return;
  const at = cards.indexOf(document.activeElement.closest && document.activeElement.closest(".card"));
  const next = cards[Math.max(0, Math.min(cards.length - 1, at + step))] || cards[0];
  next.focus();
}

function keys(ev) {
  const typing = ev.target.closest && ev.target.closest("input, textarea, select, dialog");
  if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.key === "/") { ev.preventDefault(); $("search-query").focus(); }
  else if (ev.key === "Escape" && state.view === "note") { ev.preventDefault(); closeNote(); }
  else if (ev.key === "j" || (ev.key === "ArrowDown" && ev.target.classList.contains("card"))) { ev.preventDefault(); moveFocus(1); }
  else if (ev.key === "k" || (ev.key === "ArrowUp" && ev.target.classList.contains("card"))) { ev.preventDefault(); moveFocus(-1); }
  else if (ev.key === "e" && ev.target.classList.contains("card")) { const b = ev.target.querySelector("button.edit"); if (b) { ev.preventDefault(); b.click(); } }
}

async function main() {
  $("search-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const query = $("search-query").value.trim();
    if (query && state.view !== "entries") show("entries"); // results show where the search was started
    search(query, $("search-bank").value).catch(fail);
  });
  $("toast-close").addEventListener("click", dismissToast);
  $("note-back").addEventListener("click", closeNote);
  $("clear-search").addEventListener("click", clearSearch);
  $("search-as-of").addEventListener("change", (ev) => setAsOf(ev.target.value));
  $("clear-as-of").addEventListener("click", () => { setAsOf(""); $("search-as-of").focus(); });
  $("kind-filter").addEventListener("change", (ev) => { state.kind = ev.target.value; loadEntries(true).catch(fail); });
  $("bank-filter").addEventListener("change", (ev) => { state.bank = ev.target.value; loadEntries(true).catch(fail); });
  $("more").addEventListener("click", () => loadEntries(false).catch(fail));
  $("add-button").addEventListener("click", addEntry);
  $("undo-button").addEventListener("click", undoLast);
  $("export-button").addEventListener("click", exportAll);
  $("import-file").addEventListener("change", (ev) => { const f = ev.target.files[0]; ev.target.value = ""; if (f) importFile(f); });
  $("dialog-form").addEventListener("submit", (ev) => ev.preventDefault());
  for (const b of document.querySelectorAll(".tabs button[data-view]")) b.addEventListener("click", () => show(b.dataset.view));
  document.addEventListener("keydown", keys);
  const bar = document.querySelector(".tabs");
  if ("ResizeObserver" in window) {
    new ResizeObserver(() => document.documentElement.style.setProperty("--bar", `${bar.offsetHeight}px`)).observe(bar);
  }
  if ("IntersectionObserver" in window) {
    new IntersectionObserver((seen) => {
      if (seen.some((e) => e.isIntersecting) && !$("more").hidden && !state.query) loadEntries(false).catch(fail);
    }, { rootMargin: "600px" }).observe($("more"));
  }
  await startSession();
  try {
    await loadEntries(true);
  } catch (e) {
    if (!(e instanceof CallError && e.status === 401)) fail(e);
    return;
  }
  const v = await call("version", {});
  state.version = v.version;
  await Promise.all([loadBanks(), loadConflicts(), loadUndo(), loadTree(), loadStatus()]).catch(fail);
  setInterval(poll, POLL_MS);
}

document.addEventListener("DOMContentLoaded", () => { main().catch(fail); });
