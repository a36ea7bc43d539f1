(function () {
  "use strict";
  /* The documents table: every row is in the JSON block #doccheck-rows as
     [concern, document_id, cell, ...] (concern 0: flagged, no decision; 1: flagged, decided;
     2: not flagged); a cell is its text, or {t: text, s: sort key, n: note, b: badge,
     l: [[href, label], ...], c: numeric}. One page of PAGE rows is in the DOM at a time;
     sorting and filtering work on arrays of row numbers, so 100,000 rows stay fast.
     Values are written with textContent and setAttribute only, never as markup. */
  var PAGE = 100;
  var FIRST = 2;
  var table = document.getElementById("documents");
  var block = document.getElementById("doccheck-rows");
  if (!table || !block) { return; }
  var body = table.tBodies[0];
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var rows = JSON.parse(block.textContent);
  var flaggedOnly = document.getElementById("flagged-only");
  var search = document.getElementById("search");
  var shown = document.getElementById("shown");
  var pager = document.getElementById("pager");
  var info = document.getElementById("page-info");
  var prev = document.getElementById("page-prev");
  var next = document.getElementById("page-next");
  var note = document.getElementById("static-note");
  var order = rows.map(function (row, i) { return i; });
  order.sort(function (a, b) { return rows[a][0] - rows[b][0] || a - b; });
  var visible = order;
  var page = 0;
  var keyCache = {};
  var texts = null;

  function text(cell) { return typeof cell === "string" ? cell : (cell.t || ""); }
  function sortKey(cell) { return typeof cell === "string" ? cell : (cell.s !== undefined ? cell.s : (cell.t || "")); }

  function keys(index, numeric) {
    var cacheKey = index + (numeric ? "n" : "t");
    if (!keyCache[cacheKey]) {
      keyCache[cacheKey] = rows.map(function (row) {
        var raw = sortKey(row[FIRST + index]);
        if (raw === "") { return null; }
        if (numeric) { var n = parseFloat(raw); return isNaN(n) ? null : n; }
        return raw.toLowerCase();
      });
    }
    return keyCache[cacheKey];
  }

  function searchText(i) {
    if (!texts) {
      texts = rows.map(function (row) {
        var parts = [];
        for (var c = FIRST; c < row.length; c += 1) {
          var cell = row[c];
          parts.push(text(cell));
          if (typeof cell !== "string") {
            if (cell.n) { parts.push(cell.n); }
            if (cell.l) { cell.l.forEach(function (link) { parts.push(link[1]); }); }
          }
        }
        return parts.join(" ").toLowerCase();
      });
    }
    return texts[i];
  }

  function cellElement(cell) {
    var td = document.createElement("td");
    td.setAttribute("data-value", sortKey(cell));
    if (typeof cell === "string") { td.textContent = cell; return td; }
    if (cell.c) { td.className = "num"; }
    if (cell.b) {
      var badge = document.createElement("span");
      badge.className = "badge " + cell.b;
      badge.textContent = text(cell);
      td.appendChild(badge);
    } else if (cell.l) {
      var files = document.createElement("span");
      files.className = "files";
      cell.l.forEach(function (link) {
        var a = document.createElement("a");
        a.setAttribute("href", link[0]);
        a.textContent = link[1];
        files.appendChild(a);
      });
      td.appendChild(files);
    } else {
      td.appendChild(document.createTextNode(text(cell)));
    }
    if (cell.n) {
      var muted = document.createElement("span");
      muted.className = "muted";
      muted.textContent = cell.n;
      td.appendChild(document.createElement("br"));
      td.appendChild(muted);
    }
    return td;
  }

  function rowElement(row) {
    var tr = document.createElement("tr");
    var flagged = row[0] < 2;
    tr.setAttribute("data-flagged", flagged ? "1" : "0");
    tr.setAttribute("data-document-id", row[1] === null ? "" : String(row[1]));
    if (flagged) { tr.className = "flagged"; }
    for (var c = FIRST; c < row.length; c += 1) { tr.appendChild(cellElement(row[c])); }
    return tr;
  }

  function render() {
    var pages = Math.max(1, Math.ceil(visible.length / PAGE));
    page = Math.min(page, pages - 1);
    var start = page * PAGE;
    var fragment = document.createDocumentFragment();
    visible.slice(start, start + PAGE).forEach(function (i) { fragment.appendChild(rowElement(rows[i])); });
    body.textContent = "";
    body.appendChild(fragment);
    if (shown) { shown.textContent = "showing " + visible.length + " of " + rows.length; }
    if (pager) {
      pager.hidden = visible.length <= PAGE;
      info.textContent = "rows " + (visible.length ? start + 1 : 0) + "–" + Math.min(start + PAGE, visible.length) +
        " · page " + (page + 1) + " of " + pages;
      prev.disabled = page === 0;
      next.disabled = page >= pages - 1;
    }
  }

  function applyFilter() {
    var needle = search ? search.value.trim().toLowerCase() : "";
    var onlyFlagged = flaggedOnly && flaggedOnly.checked;
    visible = (!needle && !onlyFlagged) ? order : order.filter(function (i) {
      return (!onlyFlagged || rows[i][0] < 2) && (!needle || searchText(i).indexOf(needle) !== -1);
    });
    page = 0;
    render();
  }

  function sortBy(th, index) {
    var numeric = th.getAttribute("data-type") === "number";
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var k = keys(index, numeric);
    order = order.slice().sort(function (a, b) {   /* stable: equal keys keep their order */
      var x = k[a];
      var y = k[b];
      if (x === null || y === null) { return x === null ? (y === null ? 0 : 1) : -1; }  /* empty cells last */
      var cmp = x < y ? -1 : (x > y ? 1 : 0);
      return ascending ? cmp : -cmp;
    });
    applyFilter();
  }

  headers.forEach(function (th, index) {
    var button = th.querySelector("button");
    if (button) { button.addEventListener("click", function () { sortBy(th, index); }); }
  });
  if (flaggedOnly) { flaggedOnly.addEventListener("change", applyFilter); }
  if (search) { search.addEventListener("input", applyFilter); }
  if (prev) { prev.addEventListener("click", function () { page -= 1; render(); }); }
  if (next) { next.addEventListener("click", function () { page += 1; render(); }); }
  if (note) { note.hidden = true; }
  applyFilter();
}());
