"use strict";
// The run report's script: draws the timeline and the call list with its cards from the
// JSON data block. Every string from the run goes through textContent, never markup.
(function () {
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var calls = data.calls;
  var PAGE = 200;
  var ROW = 12;
  var AXIS = 22;
  var LEFT = 8;
  var COLORS = { ok: "#2f9e5a", error: "#d43d3d", cancelled: "#8c8c8c", paused: "#d99a00", running: "#5b7bea" };

  // Bidirectional controls would reorder what is shown: shown as their names.
  var BIDI = /[\u202a-\u202e\u2066-\u2069]/g;
  function shown(text) {
    return String(text).replace(BIDI, function (c) {
      return "\u27e8U+" + c.charCodeAt(0).toString(16).toUpperCase() + "\u27e9";
    });
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = shown(text);
    return e;
  }
  // A list the report cut is {items, left_out} (a card's lists are arrays otherwise):
  // its items, and how many more there were.
  function parts(list) {
    if (Array.isArray(list)) return { items: list, more: 0 };
    if (list && Array.isArray(list.items)) return { items: list.items, more: Number(list.left_out) || 0 };
    return { items: [], more: 0 };
  }
  function cutNote(box, more, what) {
    if (more > 0) box.appendChild(el("div", "left-out", "The report left out " + more + " more " + what + "."));
  }
  function ms(c) {
    if (c.e === null || c.e === undefined) return "running";
    return ((c.e - c.s) / 1000).toFixed(1) + " ms";
  }
  function json(v) {
    return JSON.stringify(v, null, 2);
  }

  // Cards, by kind.
  function callCard(card) {
    var box = el("div", "card card-" + card.card);
    if (card.card === "terminal") {
      box.appendChild(el("div", "card-label", "command" + (card.cwd ? " in " + card.cwd : "")));
      box.appendChild(el("pre", "terminal-command", "$ " + card.command));
      if (card.description) box.appendChild(el("div", "card-kind", card.description));
    } else if (card.card === "diff") {
      box.appendChild(el("div", "card-title", (card.old_text === null ? "Create " : "Change ") + card.path));
      var sides = el("div", "diff-sides");
      var before = el("div");
      before.appendChild(el("div", "card-label", "before"));
      before.appendChild(el("pre", "diff-old", card.old_text === null ? "(new file)" : card.old_text));
      var after = el("div");
      after.appendChild(el("div", "card-label", "after"));
      after.appendChild(el("pre", "diff-new", card.new_text));
      sides.appendChild(before);
      sides.appendChild(after);
      box.appendChild(sides);
    } else {
      box.appendChild(el("div", "card-title", card.title));
      box.appendChild(el("div", "card-kind", card.kind));
      locations(box, card.locations);
    }
    return box;
  }
  function locations(box, list) {
    var p = parts(list);
    if (!p.items.length) return;
    var ul = el("ul", "locations");
    p.items.forEach(function (l) {
      ul.appendChild(el("li", "mono", l.path + (l.line ? ":" + l.line : "")));
    });
    box.appendChild(ul);
    cutNote(box, p.more, "places");
  }
  function resultCard(card) {
    var box = el("div", "card card-" + card.card);
    if (card.card === "terminal") {
      box.appendChild(el("div", "card-label", card.exit === undefined ? "output" : "output (exit " + card.exit + ")"));
      box.appendChild(el("pre", "terminal-output", card.raw_output));
    } else if (card.card === "diff") {
      box.appendChild(el("div", "card-title", "Changed " + card.path));
      var pre = el("pre", "diff-hunks");
      var hunks = parts(card.hunks);
      hunks.items.forEach(function (h) {
        var olds = parts(h.old_lines);
        var news = parts(h.new_lines);
        pre.appendChild(el("span", "hunk-head ctx",
          "@@ -" + h.old_start + "," + (olds.items.length + olds.more) +
          " +" + h.new_start + "," + (news.items.length + news.more) + " @@"));
        olds.items.forEach(function (l) { pre.appendChild(el("span", "del", "-" + l)); });
        if (olds.more) pre.appendChild(el("span", "left-out ctx", "  (" + olds.more + " more lines left out)"));
        news.items.forEach(function (l) { pre.appendChild(el("span", "add", "+" + l)); });
        if (news.more) pre.appendChild(el("span", "left-out ctx", "  (" + news.more + " more lines left out)"));
      });
      box.appendChild(pre);
      cutNote(box, hunks.more, "hunks");
    } else if (card.card === "search") {
      // What the tool returned (its own cut: `truncated`), then what the report kept.
      var returned = 0;
      var kept = 0;
      var groups = parts(card.groups);
      groups.items.forEach(function (g) {
        box.appendChild(el("div", "search-file mono", g.path));
        var ol = el("ol", "search-matches");
        var matches = parts(g.matches);
        matches.items.forEach(function (m) {
          var li = el("li", "search-match mono");
          li.appendChild(el("span", "ln", m.line));
          li.appendChild(document.createTextNode(shown(m.text)));
          ol.appendChild(li);
        });
        box.appendChild(ol);
        cutNote(box, matches.more, "matches in this file");
        returned += matches.items.length + matches.more;
        kept += matches.items.length;
      });
      cutNote(box, groups.more, "files");
      var paths = parts(card.paths);
      if (paths.items.length) {
        var ul = el("ul", "search-paths");
        paths.items.forEach(function (p) { ul.appendChild(el("li", "mono", p)); });
        box.appendChild(ul);
        cutNote(box, paths.more, "paths");
      }
      returned += paths.items.length + paths.more;
      kept += paths.items.length;
      if (card.truncated) box.appendChild(el("div", "truncated", "truncated: " + returned + " of " + card.total));
      else box.appendChild(el("div", "card-kind", card.total + (card.total === 1 ? " match" : " matches")));
    } else if (card.card === "web") {
      box.appendChild(el("div", "card-kind", card.kind));
      box.appendChild(el("div", "card-title mono", card.url));
      if (card.title) box.appendChild(el("div", "card-title", card.title));
      box.appendChild(el("pre", "web-text", card.text));
    } else {
      if (card.is_error) box.className += " is-error";
      box.appendChild(el("div", "card-title", card.title));
      box.appendChild(el("pre", "generic-text", card.text));
      locations(box, card.locations);
    }
    return box;
  }
  function details(c, into) {
    if (c.x) {
      into.appendChild(el("div", "left-out", "Details left out: the report's budget for call details was spent."));
      return;
    }
    if (c.cc) into.appendChild(callCard(c.cc));
    if (c.rc) into.appendChild(resultCard(c.rc));
    // The result card shows a failure itself; the message stands alone without one.
    if (c.er && !c.rc) into.appendChild(el("pre", "error", c.er));
    if (c.a !== undefined) {
      var args = el("details", "arguments");
      args.appendChild(el("summary", "card-label", "arguments"));
      args.appendChild(el("pre", "", json(c.a)));
      into.appendChild(args);
    }
  }

  // The call list, in tree order: each call followed by the calls made from inside it.
  var children = calls.map(function () { return []; });
  var roots = [];
  calls.forEach(function (c, i) {
    if (c.p !== null && c.p !== undefined && c.p < i) children[c.p].push(i);
    else roots.push(i);
  });
  var order = [];
  var stack = roots.slice().reverse();
  while (stack.length) {
    var i = stack.pop();
    order.push(i);
    for (var k = children[i].length - 1; k >= 0; k--) stack.push(children[i][k]);
  }
  var list = document.getElementById("call-list");
  var more = document.getElementById("more-calls");
  var shownCalls = 0;
  var items = {};
  function item(i) {
    var c = calls[i];
    var li = el("li", "call st-" + c.st);
    li.dataset.call = c.id;
    li.dataset.tool = c.tool;
    li.style.marginLeft = Math.min(c.d, 12) * 18 + "px";
    var d = el("details");
    var s = el("summary");
    s.appendChild(el("span", "dot"));
    s.appendChild(el("span", "mono", "#" + c.id + " "));
    s.appendChild(el("span", "tool mono", c.tool));
    s.appendChild(el("span", "ms", ms(c) + " · " + c.st));
    d.appendChild(s);
    details(c, d);
    li.appendChild(d);
    items[i] = li;
    return li;
  }
  function showMore() {
    var end = Math.min(order.length, shownCalls + PAGE);
    var frag = document.createDocumentFragment();
    for (; shownCalls < end; shownCalls++) frag.appendChild(item(order[shownCalls]));
    list.appendChild(frag);
    var left = order.length - shownCalls;
    more.hidden = left === 0;
    more.textContent = "Show " + Math.min(left, PAGE) + " more of " + left;
  }
  more.addEventListener("click", showMore);
  showMore();

  // The timeline.
  var canvas = document.getElementById("timeline-canvas");
  var tip = document.getElementById("timeline-tip");
  var detail = document.getElementById("call-detail");
  var byRow = [];
  for (var r = 0; r < data.rows; r++) byRow.push([]);
  calls.forEach(function (c, i) { byRow[c.r].push(i); });
  var width = 0;
  function x(t) {
    return LEFT + (t / data.span_us) * (width - 2 * LEFT);
  }
  function step(span) {
    var target = span / 8;
    var p = Math.pow(10, Math.floor(Math.log10(target)));
    var m = target / p;
    return (m < 2 ? 1 : m < 5 ? 2 : 5) * p;
  }
  function draw() {
    var ratio = window.devicePixelRatio || 1;
    width = canvas.clientWidth || 1200;
    var height = AXIS + data.rows * ROW + 4;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.height = height + "px";
    var g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.fillStyle = "#fff";
    g.fillRect(0, 0, width, height);
    g.font = "11px system-ui, sans-serif";
    g.fillStyle = "#666";
    g.strokeStyle = "#eee";
    var unit = step(data.span_us);
    for (var t = 0; t <= data.span_us; t += unit) {
      var px = x(t);
      g.beginPath();
      g.moveTo(px, AXIS - 4);
      g.lineTo(px, height);
      g.stroke();
      g.fillText(t >= 1000 ? t / 1000 + " ms" : t + " µs", px + 2, 12);
    }
    calls.forEach(function (c) {
      var x0 = x(c.s);
      var x1 = x(c.e === null || c.e === undefined ? data.span_us : c.e);
      g.fillStyle = COLORS[c.st] || COLORS.cancelled;
      g.fillRect(x0, AXIS + c.r * ROW + 1, Math.max(1, x1 - x0), ROW - 2);
    });
    // Names inside the bars wide enough for them.
    g.font = "10px system-ui, sans-serif";
    g.fillStyle = "#fff";
    calls.forEach(function (c) {
      var x0 = x(c.s);
      var x1 = x(c.e === null || c.e === undefined ? data.span_us : c.e);
      if (x1 - x0 > g.measureText(c.tool).width + 6) g.fillText(c.tool, x0 + 3, AXIS + c.r * ROW + ROW - 3);
    });
  }
  function at(ev) {
    var box = canvas.getBoundingClientRect();
    var px = ev.clientX - box.left;
    var row = Math.floor((ev.clientY - box.top - AXIS) / ROW);
    if (row < 0 || row >= data.rows) return -1;
    var best = -1;
    var bestGap = 4;
    byRow[row].forEach(function (i) {
      var c = calls[i];
      var x0 = x(c.s);
      var x1 = Math.max(x0 + 1, x(c.e === null || c.e === undefined ? data.span_us : c.e));
      var gap = px < x0 ? x0 - px : px > x1 ? px - x1 : 0;
      if (gap < bestGap) {
        bestGap = gap;
        best = i;
      }
    });
    return best;
  }
  canvas.addEventListener("mousemove", function (ev) {
    var i = at(ev);
    if (i < 0) {
      tip.hidden = true;
      return;
    }
    var c = calls[i];
    var text = "#" + c.id + " " + c.tool + "\n" + ms(c) + " · " + c.st;
    if (c.a !== undefined) text += "\n" + JSON.stringify(c.a).slice(0, 300);
    if (c.er) text += "\n" + c.er.slice(0, 300);
    tip.textContent = shown(text);
    tip.hidden = false;
    var box = canvas.getBoundingClientRect();
    tip.style.left = Math.min(ev.clientX - box.left + 12, width - 300) + "px";
    tip.style.top = ev.clientY - box.top + 12 + "px";
  });
  canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
  canvas.addEventListener("click", function (ev) {
    var i = at(ev);
    if (i < 0) return;
    var c = calls[i];
    while (detail.firstChild) detail.removeChild(detail.firstChild);
    detail.appendChild(el("div", "card-title", "#" + c.id + " " + c.tool + " · " + ms(c) + " · " + c.st));
    details(c, detail);
    if (items[i]) items[i].querySelector("details").open = true;
  });
  window.addEventListener("resize", draw);
  draw();
})();
