(() => {
  "use strict";
  const PAGE_SIZE = 100;
  const $ = (id) => document.getElementById(id);
  const payload = JSON.parse($("llmeval-data").textContent);
  const cases = payload.cases;
  /* a long text met in several cases is stored once, in payload.strings; a row holds its number */
  const shared = payload.strings || [];
  const TEXT_KEYS = new Set(["error", "expected", "response", "details", "content", "args",
    "result", "args_error"]);
  const T = (v) => (typeof v === "number" ? shared[v] : v);
  function resolved(value) {
    if (Array.isArray(value)) return value.map(resolved);
    if (value === null || typeof value !== "object") return value;
    const out = {};
    for (const key of Object.keys(value)) {
      out[key] = TEXT_KEYS.has(key) ? T(value[key]) : resolved(value[key]);
    }
    return out;
  }
  const searchBox = $("case-search");
  const outcomeSel = $("case-outcome");
  const suiteSel = $("case-suite");
  const tbody = $("case-rows");
  const info = $("pager-info");
  const state = {q: "", outcome: "", suite: "", page: 0, sort: "", desc: false, open: new Set()};
  let view = [];
  const hay = new Array(cases.length);

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function ms(v) {
    if (v >= 10000) return (v / 1000).toFixed(0) + " s";
    if (v >= 1000) return (v / 1000).toFixed(1) + " s";
    if (v >= 10 || v === 0) return v.toFixed(0) + " ms";
    return v.toFixed(1) + " ms";
  }
  function pretty(text) {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
  }
  function fileOf(c) { return c.file !== undefined ? c.file : c.nodeid.split("::")[0]; }
  /* with no column sorted, failures come first: failed, error, expected misses, then the rest */
  function rank(c) {
    if (c.outcome === "failed" && !c.xfail) return 0;
    if (c.outcome === "error") return 1;
    if (c.xfail) return 2;
    return c.outcome === "passed" ? 3 : 4;
  }
  function haystack(i) {
    if (hay[i] === undefined) {
      const c = cases[i];
      hay[i] = [c.id, c.nodeid, fileOf(c), T(c.response) || "", T(c.error) || ""].join("\n").toLowerCase();
    }
    return hay[i];
  }

  for (const name of Array.from(new Set(cases.map((c) => c.suite))).sort()) {
    const option = el("option", null, name);
    option.value = name;
    suiteSel.appendChild(option);
  }

  /* "#q=x&outcome=failed" is a view of the cases; "#latency" is just an anchor */
  const viewHash = () => location.hash.includes("=");
  function readHash() {
    const params = new URLSearchParams(viewHash() ? location.hash.slice(1) : "");
    state.q = params.get("q") || "";
    state.outcome = params.get("outcome") || "";
    state.suite = params.get("suite") || "";
    state.sort = params.get("sort") || "";
    state.desc = params.get("desc") === "1";
    state.page = Math.max(0, (parseInt(params.get("page") || "1", 10) || 1) - 1);
    state.open = new Set();
    const wanted = new Set(params.getAll("open"));
    if (wanted.size) {
      cases.forEach((c, i) => { if (wanted.has(c.nodeid) || wanted.has(c.id)) state.open.add(i); });
    }
    searchBox.value = state.q;
    outcomeSel.value = state.outcome;
    suiteSel.value = state.suite;
    return params.has("page");
  }
  function writeHash() {
    const params = new URLSearchParams();
    if (state.q) params.set("q", state.q);
    if (state.outcome) params.set("outcome", state.outcome);
    if (state.suite) params.set("suite", state.suite);
    if (state.sort) params.set("sort", state.sort);
    if (state.sort && state.desc) params.set("desc", "1");
    if (state.page) params.set("page", String(state.page + 1));
    for (const i of state.open) params.append("open", cases[i].nodeid);
    const text = params.toString();
    if (!text && !viewHash()) return;  /* keep a section anchor */
    try {
      history.replaceState(null, "", text ? "#" + text : location.pathname + location.search);
    } catch (e) { /* file:// in some browsers */ }
  }

  function compute() {
    const terms = state.q.toLowerCase().split(/\s+/).filter(Boolean);
    const out = [];
    for (let i = 0; i < cases.length; i++) {
      const c = cases[i];
      if (state.outcome === "problems") {
        if (c.outcome !== "failed" && c.outcome !== "error") continue;
      } else if (state.outcome && c.outcome !== state.outcome) continue;
      if (state.suite && c.suite !== state.suite) continue;
      if (terms.length) {
        const h = haystack(i);
        if (!terms.every((t) => h.includes(t))) continue;
      }
      out.push(i);
    }
    if (state.sort) {
      const key = state.sort;
      const sign = state.desc ? -1 : 1;
      out.sort((a, b) => {
        const x = key === "file" ? fileOf(cases[a]) : cases[a][key];
        const y = key === "file" ? fileOf(cases[b]) : cases[b][key];
        if (x === y) return a - b;
        if (x === undefined || x === null) return 1;
        if (y === undefined || y === null) return -1;
        return (x < y ? -1 : 1) * sign;
      });
    } else {
      out.sort((a, b) => rank(cases[a]) - rank(cases[b]) || a - b);
    }
    view = out;
    for (const th of document.querySelectorAll("th[data-sort]")) {
      if (th.dataset.sort !== state.sort) th.removeAttribute("aria-sort");
      else th.setAttribute("aria-sort", state.desc ? "descending" : "ascending");
    }
  }

  function caseRow(i) {
    const c = cases[i];
    const tr = el("tr", "case-row");
    tr.dataset.index = String(i);
    tr.tabIndex = 0;
    tr.setAttribute("aria-expanded", state.open.has(i) ? "true" : "false");
    tr.appendChild(el("td", "toggle", state.open.has(i) ? "▾" : "▸"));
    const id = el("td", "case-id", c.id);
    id.title = c.nodeid;
    tr.appendChild(id);
    tr.appendChild(el("td", "case-file", fileOf(c)));
    tr.appendChild(el("td", null, c.suite));
    tr.appendChild(el("td", null, c.cat === undefined ? "" : c.cat));
    const outcome = el("td");
    /* a miss a manifest expects (misses: xfail) does not fail the run: shown as expected */
    if (c.xfail) outcome.appendChild(el("span", "badge xfailed", "expected miss"));
    else outcome.appendChild(el("span", "badge " + c.outcome, c.outcome));
    tr.appendChild(outcome);
    tr.appendChild(el("td", "ms", ms(c.ms)));
    const snippet = (T(c.error) || T(c.response) || "").slice(0, 240);
    const last = el("td", c.error ? "snippet err" : "snippet", snippet);
    tr.appendChild(last);
    return tr;
  }

  function block(parent, heading, text) {
    parent.appendChild(el("h4", null, heading));
    parent.appendChild(el("pre", null, text));
  }

  function messages(parent, heading, list) {
    parent.appendChild(el("h4", null, heading));
    const ol = el("ol", "messages");
    for (const m of list) {
      if (m.role === undefined) {
        ol.appendChild(el("li", "muted", "… " + m.omitted + " messages left out"));
        continue;
      }
      const item = el("li", "message " + m.role);
      const head = el("div", "msg-head", m.role);
      const about = [];
      if (m.name !== undefined) about.push(m.name);
      if (m.call_id !== undefined) about.push("call " + m.call_id);
      if (about.length) head.appendChild(el("span", "muted", " [" + about.join(", ") + "]"));
      item.appendChild(head);
      if (m.content !== undefined) {
        const text = m.role === "tool" ? pretty(m.content) : m.content;
        item.appendChild(el("pre", "msg-content", text));
      }
      for (const call of m.calls || []) {
        item.appendChild(el("div", "muted", "calls " + call.name));
        item.appendChild(el("pre", "tool-args", pretty(call.args)));
        if (call.args_error !== undefined) {
          item.appendChild(el("div", "muted", "unparsed arguments"));
          item.appendChild(el("pre", null, call.args_error));
        }
      }
      ol.appendChild(item);
    }
    parent.appendChild(ol);
  }

  function detailRow(i) {
    const c = resolved(cases[i]);
    const tr = el("tr", "case-detail");
    const td = el("td");
    td.colSpan = 8;
    const box = el("div", "transcript");
    const file = fileOf(c);
    box.appendChild(el("div", "muted", c.nodeid + "  ·  " + file + ":" + c.line));
    if (c.error) block(box, "Error", c.error);
    if (c.input) messages(box, "Input", c.input);
    if (c.expected !== undefined) block(box, "Expected", pretty(c.expected));
    if (c.transcript) messages(box, "Transcript", c.transcript);
    const tools = c.tools || [];
    box.appendChild(el("h4", null, "Tool calls (" + (tools.length + (c.tools_more || 0)) + ")"));
    if (tools.length) {
      const list = el("ol");
      for (const call of tools) {
        const item = el("li", "tool-call");
        const head = el("div", "tool-head", call.name + " ");
        head.appendChild(el("span", "muted",
          "[" + call.source + ", " + (call.ok ? "ok" : "failed") + ", " + ms(call.ms) + "]"));
        item.appendChild(head);
        item.appendChild(el("div", "muted", "arguments"));
        item.appendChild(el("pre", "tool-args", pretty(call.args)));
        if (call.args_error !== undefined) {
          item.appendChild(el("div", "muted", "unparsed arguments"));
          item.appendChild(el("pre", null, call.args_error));
        }
        if (call.result !== undefined) {
          item.appendChild(el("div", "muted", "result"));
          item.appendChild(el("pre", "tool-result", pretty(call.result)));
        }
        list.appendChild(item);
      }
      if (c.tools_more) {
        list.appendChild(el("li", "muted", "… " + c.tools_more + " more tool calls"));
      }
      box.appendChild(list);
    } else {
      box.appendChild(el("div", "muted", "none"));
    }
    block(box, "Final response", c.response || "");
    if (c.scores) {
      const parts = Object.keys(c.scores).map((k) => k + " = " + c.scores[k]);
      block(box, "Scores", parts.join("\n"));
    }
    const facts = [];
    if (c.usage) {
      const [prompt, completion, total] = c.usage;
      facts.push(`tokens: prompt ${prompt}, completion ${completion}, total ${total}`);
    }
    if (c.fixtures) facts.push(`fixtures: ${c.fixtures[0]} hits, ${c.fixtures[1]} misses`);
    if (facts.length) box.appendChild(el("p", "muted", facts.join("  ·  ")));
    if (c.details) block(box, "Details", pretty(c.details));
    td.appendChild(box);
    tr.appendChild(td);
    return tr;
  }

  function render() {
    const pages = Math.max(1, Math.ceil(view.length / PAGE_SIZE));
    state.page = Math.min(Math.max(0, state.page), pages - 1);
    const start = state.page * PAGE_SIZE;
    const end = Math.min(view.length, start + PAGE_SIZE);
    const frag = document.createDocumentFragment();
    for (let k = start; k < end; k++) {
      const i = view[k];
      frag.appendChild(caseRow(i));
      if (state.open.has(i)) frag.appendChild(detailRow(i));
    }
    if (!view.length) {
      const tr = el("tr", "empty");
      const td = el("td", "muted", "No case matches.");
      td.colSpan = 8;
      tr.appendChild(td);
      frag.appendChild(tr);
    }
    tbody.replaceChildren(frag);
    let text = view.length ? (start + 1) + "–" + end + " of " + view.length : "0 of 0";
    if (view.length !== cases.length) text += " (filtered from " + cases.length + ")";
    info.textContent = text;
    $("page-first").disabled = $("page-prev").disabled = state.page === 0;
    $("page-next").disabled = $("page-last").disabled = state.page >= pages - 1;
    writeHash();
  }

  function toggle(tr) {
    const i = Number(tr.dataset.index);
    if (state.open.has(i)) {
      state.open.delete(i);
      const next = tr.nextElementSibling;
      if (next && next.classList.contains("case-detail")) next.remove();
    } else {
      state.open.add(i);
      tr.after(detailRow(i));
    }
    const open = state.open.has(i);
    tr.setAttribute("aria-expanded", open ? "true" : "false");
    tr.firstChild.textContent = open ? "▾" : "▸";
    writeHash();
  }

  function refilter() { state.page = 0; compute(); render(); }
  let timer = 0;
  searchBox.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => { state.q = searchBox.value; refilter(); }, 150);
  });
  outcomeSel.addEventListener("change", () => { state.outcome = outcomeSel.value; refilter(); });
  suiteSel.addEventListener("change", () => { state.suite = suiteSel.value; refilter(); });
  const go = (page) => () => { state.page = page(); render(); $("cases").scrollIntoView(); };
  $("page-first").addEventListener("click", go(() => 0));
  $("page-prev").addEventListener("click", go(() => state.page - 1));
  $("page-next").addEventListener("click", go(() => state.page + 1));
  $("page-last").addEventListener("click", go(() => Infinity));
  for (const th of document.querySelectorAll("th[data-sort]")) {
    th.addEventListener("click", () => {
      const key = th.dataset.sort;
      if (state.sort === key && !state.desc) state.desc = true;
      else if (state.sort === key) { state.sort = ""; state.desc = false; }
      else { state.sort = key; state.desc = false; }
      refilter();
    });
  }
  tbody.addEventListener("click", (event) => {
    if (event.target.closest("pre")) return;  /* let people select transcript text */
    const tr = event.target.closest("tr.case-row");
    if (tr) toggle(tr);
  });
  tbody.addEventListener("keydown", (event) => {
    const tr = event.target.closest("tr.case-row");
    if (tr && (event.key === "Enter" || event.key === " ")) { event.preventDefault(); toggle(tr); }
  });

  function load() {
    const pinned = readHash();
    compute();
    if (!pinned && state.open.size) {
      const first = view.findIndex((i) => state.open.has(i));
      if (first >= 0) state.page = Math.floor(first / PAGE_SIZE);
    }
    render();
  }
  /* a link inside the page (a baseline flip) filters the cases and shows them */
  window.addEventListener("hashchange", () => {
    if (!viewHash()) return;
    load();
    $("cases").scrollIntoView();
  });
  load();
  document.body.dataset.ready = "1";
})();
