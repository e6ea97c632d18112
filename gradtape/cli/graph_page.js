// The script of html_graph.py's page: draws one panel (traced, adjoint, optimized) at a time from the
// JSON that Python laid out, with kernels that open and close, search, pan and zoom. No library, no
// network. The URL fragment drives it too (#panel=adjoint&expand=k3,k5|all&collapse=all&search=mul&wrap=0),
// so a headless browser can open a kernel without clicking; <body>'s data-* attributes report what is
// drawn (data-nodes: equation and argument boxes, data-boxes: closed kernels, ...) for the same reason.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("graph-data").textContent);
  const G = DATA.geometry;
  const SVGNS = "http://www.w3.org/2000/svg";
  const svg = document.getElementById("view");
  const scene = document.getElementById("scene");
  const details = document.getElementById("details");
  const search = document.getElementById("search");
  let panel = null, nodeById = {}, open = new Set(), where = {}, view = { x: 20, y: 20, k: 1 };
  let elements = {}, edgeElements = [], matches = [], matchIndex = -1, selected = null, wrap = true, dragged = false;

  function el(tag, attrs, parent, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  function lineOf(n) { return "line " + n.site.line; }

  function fit(text, n) { return text.length <= n ? text : text.slice(0, n - 1) + "\u2026"; }

  function defs() {
    const d = el("defs", {}, svg);
    for (const [id, color, size] of [["arrow", "#9aa3ab", 7], ["arrow-hl", "#e67e22", 4]]) {  // scaled by the stroke
      const m = el("marker", { id: id, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: size, markerHeight: size,
                               orient: "auto-start-reverse" }, d);
      el("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: color }, m);
    }
  }

  function tabs() {
    const nav = document.getElementById("tabs");
    DATA.panels.forEach((p, i) => {
      const b = document.createElement("button");
      b.textContent = p.title;
      b.dataset.panel = p.name;
      b.onclick = () => { show(i); fitView(); };
      nav.appendChild(b);
    });
  }

  function show(i, keepOpen) {
    panel = DATA.panels[i];
    nodeById = {};
    for (const n of panel.nodes) nodeById[n.id] = n;
    if (!keepOpen) open = new Set(panel.collapsed ? [] : Object.keys(panel.groups));
    for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.panel === panel.name);
    selected = null;
    render();
    runSearch();
  }

  // The visible box that stands for a node: itself, or its kernel's box while the kernel is closed.
  function rep(id) {
    const g = nodeById[id].group;
    return g && !open.has(g) ? g : id;
  }

  function itemSize(id) {
    const g = panel.groups[id];
    if (!g) return [G.node_w, G.node_h];
    return open.has(id) ? [g.w, g.h] : [G.box_w, G.box_h];
  }

  // Columns from Python's layering and order; x and y from the items' current sizes. A long program is
  // a long row of columns (a chain of layers), so the row is wrapped like a line of text into bands
  // stacked top to bottom, as many as make the picture about as wide as the window is: every edge
  // still points to the right within a band, or on to a later band.
  function place() {
    where = {};
    const sizes = panel.columns.map(col => col.map(itemSize));
    const widths = sizes.map(s => Math.max(0, ...s.map(([w]) => w)));
    const heights = sizes.map(s => s.reduce((a, [, h]) => a + h, 0) + G.gap_y * Math.max(s.length - 1, 0));
    const total = widths.reduce((a, w) => a + w + G.gap_x, 0);
    const tallest = Math.max(1, ...heights) + G.band_gap;
    const aspect = (svg.clientWidth || 1200) / (svg.clientHeight || 800);
    const fits = total <= (svg.clientWidth || 1200) * 1.1;  // one row that fits the window at zoom 0.9 stays
    const bands = wrap && !fits ? Math.max(1, Math.round(Math.sqrt(total / (tallest * aspect)))) : 1;
    const limit = Math.max(total / bands, ...widths) + 1;
    const rows = [[]];
    let x = 0;
    panel.columns.forEach((col, j) => {
      if (x > 0 && x + widths[j] > limit) { rows.push([]); x = 0; }
      rows[rows.length - 1].push(j);
      x += widths[j] + G.gap_x;
    });
    let top = 0, right = 0;
    panel.bands = [];
    for (const row of rows) {
      const bandH = Math.max(0, ...row.map(j => heights[j]));
      x = 0;
      for (const j of row) {
        let y = top + (bandH - heights[j]) / 2;
        panel.columns[j].forEach((id, i) => {
          const [w, h] = sizes[j][i];
          where[id] = { x: x, y: y, w: w, h: h };
          const g = panel.groups[id];
          if (g && open.has(id)) {
            for (const m of g.members) where[m] = { x: x + g.pos[m][0], y: y + g.pos[m][1], w: G.node_w, h: G.node_h };
          }
          y += h + G.gap_y;
        });
        x += widths[j] + G.gap_x;
      }
      right = Math.max(right, x - G.gap_x);
      panel.bands.push([top, bandH]);
      top += bandH + G.band_gap;
    }
    return [right, Math.max(0, top - G.band_gap)];
  }

  function render() {
    scene.textContent = "";
    elements = {};
    edgeElements = [];
    const [w, h] = place();
    panel.size = [w, h];
    for (const [top, bandH] of panel.bands.slice(1)) {
      el("line", { class: "band", x1: 0, x2: w, y1: top - G.band_gap / 2, y2: top - G.band_gap / 2 }, scene);
    }
    const groupLayer = el("g", {}, scene), edgeLayer = el("g", {}, scene), nodeLayer = el("g", {}, scene);
    let nodes = 0, boxes = 0;
    for (const gid in panel.groups) {
      const g = panel.groups[gid], p = where[gid];
      if (open.has(gid)) {
        const e = el("g", { class: "group", id: "group-" + gid }, groupLayer);
        el("rect", { x: p.x, y: p.y, width: p.w, height: p.h }, e);
        const label = el("text", { class: "glabel", x: p.x + 8, y: p.y + 13 }, e,
                         "\u25be " + g.label + " \u00b7 " + g.members.length + " equations (click to close)");
        label.onclick = ev => { ev.stopPropagation(); toggle(gid); };
      } else {
        const root = nodeById[g.root];
        const e = el("g", { class: "box" + (g.members.some(m => nodeById[m].output) ? " output" : ""), id: gid }, nodeLayer);
        el("title", {}, e, g.members.map(m => nodeById[m].text).join("\n"));
        el("rect", { x: p.x, y: p.y, width: p.w, height: p.h }, e);
        el("text", { x: p.x + 8, y: p.y + 15 }, e, fit("\u25b8 " + g.label + " \u00b7 " + g.members.length + " eqns", 21));
        el("text", { x: p.x + 8, y: p.y + 30 }, e, fit(root.var + " = " + root.op, 21));
        el("text", { class: "type", x: p.x + 8, y: p.y + 43 }, e, fit(root.type + (root.site ? "  " + lineOf(root) : ""), 23));
        e.onclick = ev => { ev.stopPropagation(); if (!dragged) toggle(gid); };
        elements[gid] = e;
        boxes++;
      }
    }
    for (const n of panel.nodes) {
      if (rep(n.id) !== n.id) continue;
      const p = where[n.id];
      const cls = "node " + n.kind + (n.output ? " output" : "") + (n.site && n.site.derivative ? " deriv" : "");
      const e = el("g", { class: cls, id: n.id }, nodeLayer);
      el("title", {}, e, n.text + "\n" + n.type + (n.site ? "\nat " + n.site.at + ": " + n.site.code : "") +
                         (n.note ? "\n" + n.note : ""));
      el("rect", { x: p.x, y: p.y, width: p.w, height: p.h }, e);
      el("text", { x: p.x + 7, y: p.y + 15 }, e, fit(n.kind === "input" ? n.var + " (argument)" : n.var + " = " + n.op, 19));
      el("text", { class: "type", x: p.x + 7, y: p.y + 29 }, e,
         fit(n.type + (n.site ? "  " + lineOf(n) : ""), 21));
      e.onclick = ev => { ev.stopPropagation(); if (!dragged) select(n.id); };
      elements[n.id] = e;
      nodes++;
    }
    const seen = new Set();
    for (const [a, b] of panel.edges) {
      const s = rep(a), d = rep(b);
      if (s === d || seen.has(s + ">" + d)) continue;
      seen.add(s + ">" + d);
      const p = where[s], q = where[d];
      const x1 = p.x + p.w, y1 = p.y + p.h / 2, x2 = q.x, y2 = q.y + q.h / 2;
      const bend = x2 > x1 ? Math.max(30, (x2 - x1) / 2) : 60;  // to a later band: out right, in from the left
      // An edge to another band (or far along one) is the adjoint reading a primal value: faint, so
      // the chains stay readable; a selected box's edges are drawn in full.
      const far = x2 <= x1 || x2 - x1 > 3 * (G.box_w + G.gap_x);
      const e = el("path", { class: far ? "edge far" : "edge", d: `M ${x1} ${y1} C ${x1 + bend} ${y1} ${x2 - bend} ${y2} ${x2} ${y2}` }, edgeLayer);
      edgeElements.push([s, d, e]);
    }
    const ds = document.body.dataset;
    ds.panel = panel.name;
    ds.equations = panel.equations;
    ds.nodes = nodes;
    ds.boxes = boxes;
    ds.open = open.size;
    ds.kernels = Object.keys(panel.groups).length;
    ds.edges = edgeElements.length;
    ds.width = Math.round(w);
    ds.height = Math.round(h);
    if (selected && elements[selected]) select(selected);
    applyView();
  }

  function toggle(gid) {
    if (open.has(gid)) open.delete(gid); else open.add(gid);
    render();
    runSearch(true);
  }

  function select(id) {
    for (const e of scene.querySelectorAll(".selected")) e.classList.remove("selected");
    for (const [, , e] of edgeElements) e.classList.remove("hl");
    selected = id;
    const e = elements[id];
    if (!e) return;
    e.classList.add("selected");
    for (const [s, d, path] of edgeElements) if (s === id || d === id) path.classList.add("hl");
    const n = nodeById[id];
    details.textContent = "";
    const add = (tag, text, cls) => { const x = document.createElement(tag); x.textContent = text; if (cls) x.className = cls; details.appendChild(x); return x; };
    if (!n) {
      const g = panel.groups[id];
      add("h3", g.label + ": " + g.members.length + " equations, one loop nest");
      add("pre", g.members.map(m => nodeById[m].text).join("\n"));
      add("p", "Click the box to open it.", "hint");
      return;
    }
    add("h3", n.kind === "input" ? "argument " + n.var : n.var + " = " + n.op);
    add("pre", n.text);
    add("p", "type " + n.type + (n.group ? " \u00b7 in " + panel.groups[n.group].label : "") + (n.note ? " \u00b7 " + n.note : ""));
    if (n.site) {
      const p = add("p", n.site.derivative ? "derivative of the equation traced at " : "traced at ");
      const a = document.createElement("a");
      a.href = "file://" + n.site.path;
      a.textContent = n.site.at;
      a.title = n.site.path + ":" + n.site.line;
      p.appendChild(a);
      add("pre", n.site.code);
    }
  }

  function runSearch(keepIndex) {
    for (const e of scene.querySelectorAll(".match")) e.classList.remove("match");
    const q = search.value.trim().toLowerCase();
    matches = q ? panel.nodes.filter(n => n.var.toLowerCase() === q || n.op.toLowerCase().includes(q)).map(n => n.id) : [];
    if (!keepIndex) matchIndex = -1;
    const lit = new Set(matches.map(rep));
    for (const id of lit) if (elements[id]) elements[id].classList.add("match");
    document.getElementById("matches").textContent = q ? matches.length + " match" + (matches.length === 1 ? "" : "es") : "";
    document.body.dataset.matches = matches.length;
  }

  // Enter: the next match, its kernel opened, centred and selected.
  function nextMatch() {
    if (!matches.length) return;
    matchIndex = (matchIndex + 1) % matches.length;
    const id = matches[matchIndex], g = nodeById[id].group;
    if (g && !open.has(g)) { open.add(g); render(); runSearch(true); }
    const p = where[id];
    view.x = svg.clientWidth / 2 - (p.x + p.w / 2) * view.k;
    view.y = svg.clientHeight / 2 - (p.y + p.h / 2) * view.k;
    applyView();
    select(id);
  }

  function applyView() {
    scene.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
    document.body.dataset.zoom = view.k.toFixed(3);
  }

  // The whole panel in the window, unless its text would be too small to read: then readable size,
  // from the left (where the arguments are).
  function fitView() {
    const [w, h] = panel.size, vw = svg.clientWidth || 1200, vh = svg.clientHeight || 800;
    const k = Math.min((vw - 40) / Math.max(w, 1), (vh - 40) / Math.max(h, 1), 1.3);
    view.k = Math.max(k, 0.6);
    view.x = view.k === k ? (vw - w * k) / 2 : 20;
    view.y = h * view.k < vh ? (vh - h * view.k) / 2 : 20;
    applyView();
  }

  function panZoom() {
    let drag = null;
    svg.addEventListener("mousedown", e => {
      drag = [e.clientX, e.clientY, view.x, view.y];
      dragged = false;
      svg.classList.add("panning");
    });
    window.addEventListener("mousemove", e => {
      if (!drag) return;
      dragged = dragged || Math.abs(e.clientX - drag[0]) + Math.abs(e.clientY - drag[1]) > 3;
      view.x = drag[2] + e.clientX - drag[0];
      view.y = drag[3] + e.clientY - drag[1];
      applyView();
    });
    window.addEventListener("mouseup", () => { drag = null; svg.classList.remove("panning"); });
    svg.addEventListener("wheel", e => {
      e.preventDefault();
      const r = svg.getBoundingClientRect(), mx = e.clientX - r.left, my = e.clientY - r.top;
      const k = Math.min(4, Math.max(0.05, view.k * Math.exp(-e.deltaY * 0.0015)));
      view.x = mx - (mx - view.x) * k / view.k;
      view.y = my - (my - view.y) * k / view.k;
      view.k = k;
      applyView();
    }, { passive: false });
  }

  // #panel=NAME&expand=k3,k5|all&collapse=all&search=TEXT&select=VAR&wrap=0
  function fromFragment() {
    const f = new URLSearchParams(location.hash.slice(1));
    const i = DATA.panels.findIndex(p => p.name === f.get("panel"));
    show(i >= 0 ? i : 0);
    if (f.get("collapse") === "all") open.clear();
    const expand = f.get("expand");
    if (expand === "all") open = new Set(Object.keys(panel.groups));
    else if (expand) for (const g of expand.split(",")) if (panel.groups[g]) open.add(g);
    if (f.has("search")) search.value = f.get("search");
    wrap = f.get("wrap") !== "0";
    document.getElementById("wrap").textContent = wrap ? "one row" : "wrap";
    render();
    runSearch();
    fitView();
    if (f.has("select")) {
      const n = panel.nodes.find(n => n.var === f.get("select"));
      if (n) select(rep(n.id));
    }
    document.body.dataset.ready = "1";
  }

  defs();
  tabs();
  panZoom();
  search.addEventListener("input", () => runSearch());
  search.addEventListener("keydown", e => { if (e.key === "Enter") nextMatch(); });
  document.getElementById("expand-all").onclick = () => { open = new Set(Object.keys(panel.groups)); render(); runSearch(); };
  document.getElementById("collapse-all").onclick = () => { open.clear(); render(); runSearch(); };
  document.getElementById("fit").onclick = fitView;
  document.getElementById("wrap").onclick = e => {
    wrap = !wrap;
    e.target.textContent = wrap ? "one row" : "wrap";
    render();
    runSearch();
    fitView();
  };
  // A click on the background (not the end of a drag) clears the selection.
  svg.addEventListener("click", () => { if (selected && !dragged) { selected = null; render(); } });
  window.addEventListener("hashchange", fromFragment);
  window.addEventListener("resize", fitView);
  fromFragment();
})();
