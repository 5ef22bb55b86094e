// evalfleet report viewer: the items embedded in this page as a sortable, filterable table, and
// one item's inputs, judge verdicts, metrics and fail tags one click away. No network, no library.
(function () {
  "use strict";
  var data = function (id) { return JSON.parse(document.getElementById(id).textContent); };
  var items = data("items"), meanings = data("meanings");
  var PAGE = 100;
  var uniq = function (xs) { return Array.from(new Set(xs)); };
  var groupKeys = uniq(items.flatMap(function (it) {
    return Object.keys(it.group || {}).filter(function (k) { return it.group[k] != null; });
  }));
  var dims = uniq(items.flatMap(function (it) { return Object.keys(it.scores || {}); }));
  var mets = uniq(items.flatMap(function (it) { return Object.keys(it.metrics || {}); }));
  var tags = uniq(items.flatMap(function (it) { return it.fail_tags || []; })).sort();
  var num = function (k, label, get) { return { key: k, label: label, get: get, num: true }; };
  var columns = [
    num("index", "#", function (it) { return it.index; }),
    { key: "id", label: "id", get: function (it) { return it.id; } },
    { key: "outcome", label: "outcome", get: function (it) { return it.outcome; } }
  ].concat(groupKeys.map(function (g) {
    return { key: "g:" + g, label: g, get: function (it) { return (it.group || {})[g]; } };
  })).concat([
    { key: "tags", label: "fail tags", get: function (it) { return (it.fail_tags || []).join(" "); } },
    num("overall", "overall", function (it) { return it.overall_score; })
  ]).concat(dims.map(function (d) {
    return num("s:" + d, d, function (it) { var s = (it.scores || {})[d]; return s ? s.score : null; });
  })).concat(mets.map(function (m) {
    return num("m:" + m, m, function (it) { return (it.metrics || {})[m]; });
  }));
  var state = { sort: null, dir: 1, page: 0 };

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) {
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }
  function show(v) {
    if (v == null) return "–";
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(3);
    return String(v);
  }
  function select(id, label, options) {
    var s = el("select", { id: id }, [el("option", { value: "" }, [label + ": all"])]);
    options.forEach(function (o) { s.appendChild(el("option", { value: o[0] }, [o[1]])); });
    s.addEventListener("change", function () { state.page = 0; render(); });
    return s;
  }

  var controls = document.getElementById("controls");
  controls.appendChild(select("f-outcome", "outcome", [["ok", "ok"], ["failed", "failed"], ["skipped", "skipped"]]));
  controls.appendChild(select("f-tag", "fail tag",
    [["(any)", "any fail tag"], ["(none)", "no fail tag"]].concat(tags.map(function (t) { return [t, t]; }))));
  groupKeys.forEach(function (g) {
    var values = uniq(items.map(function (it) { return (it.group || {})[g]; }).filter(function (v) { return v != null; })).sort();
    controls.appendChild(select("f-g-" + g, g, values.map(function (v) { return [v, v]; })));
  });
  var search = el("input", { id: "f-search", type: "search", placeholder: "search id, inputs, reasoning…" });
  search.addEventListener("input", function () { state.page = 0; render(); });
  controls.appendChild(search);

  var haystacks = items.map(function (it) {
    var parts = [it.id, it.reason || ""];
    Object.values(it.inputs || {}).forEach(function (t) { parts.push(String(t)); });
    Object.values(it.scores || {}).forEach(function (s) { parts.push(s.reasoning || ""); });
    return parts.join("\n").toLowerCase();
  });

  function visible() {
    var v = function (id) { var e = document.getElementById(id); return e ? e.value : ""; };
    var outcome = v("f-outcome"), tag = v("f-tag"), q = v("f-search").trim().toLowerCase();
    var rows = [];
    items.forEach(function (it, i) {
      if (outcome && it.outcome !== outcome) return;
      var t = it.fail_tags || [];
      if (tag === "(any)" && !t.length) return;
      if (tag === "(none)" && t.length) return;
      if (tag && tag[0] !== "(" && t.indexOf(tag) < 0) return;
      for (var k = 0; k < groupKeys.length; k++) {
        var want = v("f-g-" + groupKeys[k]);
        if (want && (it.group || {})[groupKeys[k]] !== want) return;
      }
      if (q && haystacks[i].indexOf(q) < 0) return;
      rows.push(it);
    });
    if (state.sort) {
      var col = columns.filter(function (c) { return c.key === state.sort; })[0];
      rows.sort(function (a, b) {
        var x = col.get(a), y = col.get(b);
        if (x == null && y == null) return 0;
        if (x == null) return 1; // nulls last, whichever the direction
        if (y == null) return -1;
        return (col.num ? x - y : String(x).localeCompare(String(y))) * state.dir;
      });
    }
    return rows;
  }

  var table = document.getElementById("items-table");
  function render() {
    var rows = visible();
    var pages = Math.max(1, Math.ceil(rows.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    table.textContent = "";
    var head = el("tr");
    columns.forEach(function (c) {
      var arrow = state.sort === c.key ? (state.dir > 0 ? " ▲" : " ▼") : "";
      var th = el("th", { "data-key": c.key, title: "sort by " + c.label }, [c.label + arrow]);
      th.addEventListener("click", function () {
        state.dir = state.sort === c.key ? -state.dir : 1;
        state.sort = c.key;
        render();
      });
      head.appendChild(th);
    });
    table.appendChild(el("thead", {}, [head]));
    var body = el("tbody");
    rows.slice(state.page * PAGE, (state.page + 1) * PAGE).forEach(function (it) {
      var tr = el("tr", { "data-index": String(it.index), class: "item " + it.outcome + (it.passed ? "" : " failing") });
      columns.forEach(function (c) { tr.appendChild(el("td", {}, [show(c.get(it))])); });
      tr.addEventListener("click", function () { detail(it); });
      body.appendChild(tr);
    });
    table.appendChild(body);
    document.getElementById("count").textContent = rows.length + " of " + items.length + " items";
    document.getElementById("page").textContent = "page " + (state.page + 1) + " of " + pages;
  }
  document.getElementById("prev").addEventListener("click", function () {
    state.page = Math.max(0, state.page - 1); render();
  });
  document.getElementById("next").addEventListener("click", function () { state.page += 1; render(); });

  function section(title, nodes) { return [el("h3", {}, [title])].concat(nodes); }
  function detail(it) {
    var panel = document.getElementById("detail");
    panel.textContent = "";
    var head = it.id + " · " + it.outcome + (it.line ? " · line " + it.line : " · index " + it.index);
    var nodes = [el("h2", {}, [head])];
    if (it.reason) nodes = nodes.concat(section("Reason", [el("p", { class: "reason" }, [it.reason])]));
    var inputs = Object.keys(it.inputs || {});
    if (inputs.length) {
      nodes = nodes.concat(section("Inputs", inputs.map(function (k) {
        return el("div", {}, [el("b", {}, [k]), el("pre", { class: "input" }, [String(it.inputs[k])])]);
      })));
    }
    var scored = Object.keys(it.scores || {});
    if (scored.length) {
      nodes = nodes.concat(section("Judges", scored.map(function (d) {
        var s = it.scores[d], j = s.judge ? " · " + [s.judge.provider, s.judge.model].filter(Boolean).join(" ") : "";
        return el("div", { class: "verdict" }, [
          el("b", {}, [d + ": " + show(s.score) + j + (s.human != null ? " · human " + show(s.human) : "")]),
          el("p", { class: "reasoning" }, [s.reasoning || s.unscored || ""])
        ]);
      })));
    }
    var metrics = Object.keys(it.metrics || {});
    if (metrics.length) {
      nodes = nodes.concat(section("Metrics and checks", [el("table", {}, metrics.map(function (m) {
        return el("tr", {}, [el("td", {}, [m]), el("td", {}, [show(it.metrics[m])])]);
      }))]));
    }
    if ((it.fail_tags || []).length) {
      nodes = nodes.concat(section("Fail tags", [el("ul", {}, it.fail_tags.map(function (t) {
        return el("li", {}, [el("code", {}, [t]), " " + (meanings[t] || "")]);
      }))]));
    }
    var close = el("button", { id: "close" }, ["close"]);
    close.addEventListener("click", function () { panel.hidden = true; });
    nodes.unshift(close);
    nodes.forEach(function (n) { panel.appendChild(n); });
    panel.hidden = false;
  }
  render();
  window.__viewerReady = true;
})();
