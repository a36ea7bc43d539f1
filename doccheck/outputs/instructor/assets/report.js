(function () {
  "use strict";
  var table = document.getElementById("documents");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var flaggedOnly = document.getElementById("flagged-only");
  var search = document.getElementById("search");
  var shown = document.getElementById("shown");

  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    var raw = cell ? cell.getAttribute("data-value") : null;
    if (raw === null || raw === "") { return null; }
    if (numeric) { var n = parseFloat(raw); return isNaN(n) ? null : n; }
    return raw.toLowerCase();
  }

  function sortBy(th, index) {
    var numeric = th.getAttribute("data-type") === "number";
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) { other.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var keyed = rows.map(function (row, position) { return { row: row, key: cellValue(row, index, numeric), position: position }; });
    keyed.sort(function (a, b) {
      if (a.key === null && b.key === null) { return a.position - b.position; }
      if (a.key === null) { return 1; }   /* empty cells last in both directions */
      if (b.key === null) { return -1; }
      var order = a.key < b.key ? -1 : (a.key > b.key ? 1 : 0);
      return (ascending ? order : -order) || a.position - b.position;
    });
    keyed.forEach(function (item) { body.appendChild(item.row); });
    rows = keyed.map(function (item) { return item.row; });
  }

  function applyFilter() {
    var needle = search ? search.value.trim().toLowerCase() : "";
    var count = 0;
    rows.forEach(function (row) {
      var visible = (!flaggedOnly || !flaggedOnly.checked || row.getAttribute("data-flagged") === "1") &&
        (!needle || row.textContent.toLowerCase().indexOf(needle) !== -1);
      row.classList.toggle("hidden", !visible);
      if (visible) { count += 1; }
    });
    if (shown) { shown.textContent = "showing " + count + " of " + rows.length; }
  }

  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
    var button = th.querySelector("button");
    if (button) { button.addEventListener("click", function () { sortBy(th, index); }); }
  });
  if (flaggedOnly) { flaggedOnly.addEventListener("change", applyFilter); }
  if (search) { search.addEventListener("input", applyFilter); }
  applyFilter();
}());
