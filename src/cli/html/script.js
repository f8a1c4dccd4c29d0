(function () {
  "use strict";
  var rows = JSON.parse(document.getElementById("rows").textContent);
  var colours = JSON.parse(document.getElementById("colours").textContent);
  var body = document.querySelector("#problems tbody");
  var filter = document.getElementById("filter");
  var status = document.getElementById("status-filter");
  var shown = document.getElementById("shown");
  var sortKey = "level", sortDir = 1;
  var statuses = {};
  rows.forEach(function (r) { statuses[r.status] = true; });
  Object.keys(statuses).sort().forEach(function (s) {
    var o = document.createElement("option"); o.value = s; o.textContent = s; status.appendChild(o);
  });
  function fmt(x, digits) { return x === null || x === undefined ? "" : Number(x).toFixed(digits); }
  function cell(tr, text, cls) {
    var td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; tr.appendChild(td); return td;
  }
  function key(r, k) {
    var v = r[k];
    if (k === "problem") return r.level * 100000 + r.id;
    return v === null || v === undefined ? -Infinity : v;
  }
  function render() {
    var text = filter.value.toLowerCase(), want = status.value;
    var list = rows.filter(function (r) {
      if (want && r.status !== want) return false;
      if (!text) return true;
      return [r.name, r.status, r.reason, r.kernels, r.candidate, "level " + r.level].join(" ").toLowerCase().indexOf(text) >= 0;
    });
    list.sort(function (a, b) {
      var x = key(a, sortKey), y = key(b, sortKey);
      if (typeof x === "string" || typeof y === "string") return sortDir * String(x).localeCompare(String(y));
      return sortDir * (x - y) || (a.level - b.level) || (a.id - b.id);
    });
    body.textContent = "";
    list.forEach(function (r) {
      var tr = document.createElement("tr");
      cell(tr, r.level, "num");
      cell(tr, r.name);
      var st = cell(tr, ""); var span = document.createElement("span");
      span.className = "status"; span.textContent = r.status; span.style.background = colours[r.status] || "#999"; st.appendChild(span);
      cell(tr, r.speedup === null ? "" : fmt(r.speedup, 3) + "x" + (r.lo === null ? "" : " [" + fmt(r.lo, 3) + ", " + fmt(r.hi, 3) + "]"), "num");
      cell(tr, r.sol === null ? "" : fmt(100 * r.sol, 1) + "%", "num");
      cell(tr, r.candidates, "num");
      cell(tr, r.reason, "reason");
      cell(tr, r.kernels, "kernels").title = r.kernels_full;
      cell(tr, r.candidate);
      body.appendChild(tr);
    });
    shown.textContent = list.length + " of " + rows.length + " problems";
  }
  document.querySelectorAll("#problems th").forEach(function (th) {
    th.addEventListener("click", function () {
      var k = th.getAttribute("data-key");
      sortDir = sortKey === k ? -sortDir : 1; sortKey = k;
      document.querySelectorAll("#problems th").forEach(function (o) { o.className = ""; });
      th.className = sortDir > 0 ? "sorted-asc" : "sorted-desc";
      render();
    });
  });
  // A view can be named in the address: #status=correct&sort=speedup&dir=-1&filter=conv
  (location.hash || "").replace(/^#/, "").split("&").forEach(function (part) {
    var kv = part.split("="), k = kv[0], v = decodeURIComponent(kv[1] || "");
    if (k === "status") status.value = v;
    else if (k === "filter") filter.value = v;
    else if (k === "sort") sortKey = v;
    else if (k === "dir") sortDir = v === "-1" ? -1 : 1;
  });
  filter.addEventListener("input", render);
  status.addEventListener("change", render);
  render();
})();
