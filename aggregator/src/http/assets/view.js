// evalfleet item viewer: a finished run's items, page by page, from the aggregator's API
// (GET /runs/{id}/items and /items/facets): filters, text search, sortable columns, paging and
// one item's detail. Nothing but this page and that API; a token asked for once is kept in
// sessionStorage and sent as `Authorization: Bearer`.
(function () {
  "use strict";
  var PAGE = 100, KEY = "evalfleet-api-token";
  var base = location.pathname.replace(/\/view\/?$/, "");
  var runId = decodeURIComponent(base.split("/").pop());
  var state = { status: "", tag: "", groups: {}, q: "", sort: "", offset: 0 };
  var facets = null, all = null, seq = 0, waiting = null;
  window.__viewerPending = 0;

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) {
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }
  function $(id) { return document.getElementById(id); }
  function show(v) {
    if (v == null) return "–";
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(3);
    if (Array.isArray(v)) return v.join(" ");
    return String(v);
  }

  // The API, with the token when there is one; a 401 asks for it (again) and retries.
  function api(path) {
    var headers = {}, token = sessionStorage.getItem(KEY);
    if (token) headers.Authorization = "Bearer " + token;
    window.__viewerPending += 1;
    return fetch(base + path, { headers: headers, cache: "no-store" }).then(function (r) {
      return r.text().then(function (text) {
        var body = null;
        try { body = JSON.parse(text); } catch (e) { body = { error: text }; }
        if (r.status === 401) {
          return askToken(token ? "That token was refused." : "").then(function () { return api(path); });
        }
        if (!r.ok) throw new Error((body && body.error) || ("HTTP " + r.status));
        return body;
      });
    }).finally(function () { window.__viewerPending -= 1; });
  }
  function askToken(message) {
    sessionStorage.removeItem(KEY);
    $("auth").hidden = false;
    $("auth-error").textContent = message;
    $("token").focus();
    if (!waiting) {
      waiting = new Promise(function (resolve) {
        $("auth").onsubmit = function (ev) {
          ev.preventDefault();
          var value = $("token").value.trim();
          if (!value) return;
          sessionStorage.setItem(KEY, value);
          $("token").value = "";
          $("auth").hidden = true;
          waiting = null;
          resolve();
        };
      });
    }
    return waiting;
  }

  function query() {
    var p = new URLSearchParams();
    if (state.status) p.set("status", state.status);
    if (state.tag) p.set("tag", state.tag);
    var g = Object.keys(state.groups).filter(function (k) { return state.groups[k]; })
      .map(function (k) { return k + "=" + state.groups[k]; });
    if (g.length) p.set("group", g.join(","));
    if (state.q) p.set("q", state.q);
    if (state.sort) p.set("sort", state.sort);
    p.set("offset", String(state.offset));
    p.set("limit", String(PAGE));
    return "/items?" + p.toString();
  }

  function select(id, label, values, onChange) {
    var s = el("select", { id: id }, [el("option", { value: "" }, [label + ": all"])]);
    values.forEach(function (v) { s.appendChild(el("option", { value: v }, [v])); });
    s.addEventListener("change", function () { onChange(s.value); state.offset = 0; render(); });
    return s;
  }
  function controls() {
    var c = $("controls");
    c.textContent = "";
    c.appendChild(select("f-status", "status", ["ok", "failed", "skipped"], function (v) { state.status = v; }));
    c.appendChild(select("f-tag", "fail tag", facets.tags, function (v) { state.tag = v; }));
    Object.keys(facets.groups).forEach(function (k) {
      c.appendChild(select("f-g-" + k, k, facets.groups[k], function (v) { state.groups[k] = v; }));
    });
    var search = el("input", { id: "f-search", type: "search", placeholder: "search id, reason, reasoning, outputs, metadata…" });
    var timer = null;
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { state.q = search.value.trim(); state.offset = 0; render(); }, 250);
    });
    c.appendChild(search);
  }

  // The table's columns: the row's identity, groups, tags, then every figure the API sorts by.
  function columns() {
    var cols = facets.columns, pick = function (f) { return cols.filter(f); };
    var named = function (n) { return cols.indexOf(n) >= 0 ? [n] : []; };
    return [].concat(named("index"), named("id"), named("status"),
      pick(function (c) { return c.indexOf("group.") === 0; }), named("fail_tags"), named("overall_score"),
      pick(function (c) { return /\.score$/.test(c) && c.indexOf("target.") !== 0; }),
      pick(function (c) { return c.indexOf("metric.") === 0; }), named("latency_ms"), named("cost_usd"));
  }
  function label(c) {
    return c === "index" ? "#" : c === "fail_tags" ? "fail tags" : c.replace(/^(group|metric)\./, "").replace(/\.score$/, "");
  }

  function render() {
    var mine = ++seq;
    document.body.classList.add("busy");
    return api(query()).then(function (page) {
      if (mine !== seq) return;
      $("error").textContent = "";
      draw(page);
    }).catch(function (e) {
      if (mine === seq) $("error").textContent = String(e.message || e);
    }).finally(function () {
      if (mine === seq) document.body.classList.remove("busy");
    });
  }
  function draw(page) {
    var table = $("items-table"), cols = columns();
    table.textContent = "";
    var head = el("tr");
    cols.forEach(function (c) {
      var sortable = c !== "fail_tags";
      var arrow = state.sort === c ? " ▲" : state.sort === "-" + c ? " ▼" : "";
      var th = el("th", { "data-key": c, class: sortable ? "sortable" : "", title: sortable ? "sort by " + c : c }, [label(c) + arrow]);
      if (sortable) {
        th.addEventListener("click", function () {
          state.sort = state.sort === c ? "-" + c : c;
          state.offset = 0;
          render();
        });
      }
      head.appendChild(th);
    });
    table.appendChild(el("thead", {}, [head]));
    var body = el("tbody");
    page.items.forEach(function (it) {
      var cls = "item " + it.status + (it.passed === false ? " failing" : "");
      var tr = el("tr", { "data-index": String(it.index), class: cls });
      cols.forEach(function (c) {
        tr.appendChild(el("td", typeof it[c] === "number" ? { class: "num" } : {}, [show(it[c])]));
      });
      tr.addEventListener("click", function () { detail(it); });
      body.appendChild(tr);
    });
    table.appendChild(body);
    // A first page of a filter may answer before its count ends: the total is then a lower
    // bound ("at least"), and the next page asked for brings the exact one.
    var exact = page.total_exact !== false;
    var pages = Math.max(1, Math.ceil(page.total / PAGE));
    var at = Math.floor(state.offset / PAGE) + 1;
    $("count").textContent = (exact ? "" : "at least ") + page.total + " of " + all + " items";
    $("page").textContent = "page " + at + " of " + (exact ? "" : "at least ") + pages;
    $("prev").disabled = state.offset === 0;
    $("next").disabled = exact && state.offset + PAGE >= page.total;
  }

  function section(title, nodes) { return [el("h3", {}, [title])].concat(nodes); }
  function json(text) {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return String(text); }
  }
  function detail(it) {
    var panel = $("detail");
    panel.textContent = "";
    var where = it.line != null ? " · line " + it.line : " · index " + it.index;
    var nodes = [el("button", { id: "close" }, ["close"]), el("h2", {}, [it.id + " · " + it.status + where])];
    if (it.reason) nodes = nodes.concat(section("Reason", [el("p", { class: "reason" }, [it.reason])]));
    var dims = Object.keys(it).filter(function (k) { return /\.score$/.test(k) && k.indexOf("target.") !== 0; })
      .map(function (k) { return k.slice(0, -6); });
    var judged = dims.filter(function (d) { return it[d + ".judge"] != null; });
    if (judged.length) {
      nodes = nodes.concat(section("Judges", judged.map(function (d) {
        var unscored = it[d + ".unscored"] ? " · unscored" : "";
        return el("div", { class: "verdict" }, [
          el("b", {}, [d + ": " + show(it[d + ".score"]) + " · " + it[d + ".judge"] + unscored]),
          el("p", { class: "reasoning" }, [it[d + ".reasoning"] || ""])
        ]);
      })));
    }
    var figures = Object.keys(it).filter(function (k) { return k.indexOf("metric.") === 0 || k.indexOf("group.") === 0; });
    if (figures.length) {
      nodes = nodes.concat(section("Metrics and groups", [el("table", {}, figures.map(function (k) {
        return el("tr", {}, [el("td", {}, [k]), el("td", {}, [show(it[k])])]);
      }))]));
    }
    if ((it.fail_tags || []).length) {
      nodes = nodes.concat(section("Fail tags", [el("ul", {}, it.fail_tags.map(function (t) {
        return el("li", {}, [el("code", {}, [t])]);
      }))]));
    }
    ["outputs", "metadata", "epochs"].forEach(function (k) {
      if (it[k] != null) nodes = nodes.concat(section(k, [el("pre", { class: k }, [json(it[k])])]));
    });
    var usage = ["overall_score", "passed", "latency_ms", "attempts", "tokens_in", "tokens_out", "cost_usd",
      "target.name", "target.latency_ms", "target.attempts", "target.tokens_in", "target.tokens_out", "target.cost_usd"]
      .filter(function (k) { return it[k] != null; });
    nodes = nodes.concat(section("Usage", [el("table", {}, usage.map(function (k) {
      return el("tr", {}, [el("td", {}, [k]), el("td", {}, [show(it[k])])]);
    }))]));
    nodes.forEach(function (n) { panel.appendChild(n); });
    $("close").addEventListener("click", function () { panel.hidden = true; });
    panel.hidden = false;
  }

  $("prev").addEventListener("click", function () { state.offset = Math.max(0, state.offset - PAGE); render(); });
  $("next").addEventListener("click", function () { state.offset += PAGE; render(); });
  $("title").textContent = "Run " + runId;
  document.title = "evalfleet · " + runId + " · items";

  Promise.all([api(""), api("/items/facets"), api("/items?limit=0")]).then(function (r) {
    var run = r[0].run || {};
    facets = r[1];
    all = r[2].total;
    $("run-meta").textContent = [run.suite, run.status, all + " items"].filter(Boolean).join(" · ");
    controls();
    return render();
  }).then(function () {
    window.__viewerReady = true;
  }).catch(function (e) {
    $("error").textContent = String(e.message || e);
  });
})();
