"""The script and styles of the HTML report's interactive parts: filter, sort, waveform.

Plain JavaScript inlined in the page (no CDN, nothing fetched), as pytest-html's report works:
a checkbox per verdict with its count, a text box that matches case ids, clauses and details, and
column headers that sort the table when clicked (again: the other way).
"""

from __future__ import annotations

FILTER_CSS = (
    ".filters{margin:.6rem 0;padding:.4rem .6rem;background:#f7f7f7;border:1px solid #ddd;border-radius:4px}"
    ".filters label{margin-right:1rem;white-space:nowrap}"
    ".filters input[type=search]{width:18rem;margin-left:.5rem}"
    "table.cases th.sortable{cursor:pointer;user-select:none}"
    "table.cases th.sortable:after{content:' \\2195';color:#999}"
    "table.cases th[aria-sort=ascending]:after{content:' \\2191';color:#111}"
    "table.cases th[aria-sort=descending]:after{content:' \\2193';color:#111}"
    "dl.clauses dt{font-weight:600;margin-top:.4rem}dl.clauses dd{margin-left:1.2rem}"
    ":target{background:#fff8c4}"
    "svg.wave{width:100%;height:120px;background:#fbfbfb;border:1px solid #ddd}"
    ".legend{font-size:12px;color:#555}"
)

FILTER_JS = r"""
(function () {
  var table = document.querySelector('table.cases');
  if (!table) return;
  var rows = Array.prototype.slice.call(table.querySelectorAll('tr[data-verdict]'));
  var boxes = Array.prototype.slice.call(document.querySelectorAll('.filters input[data-verdict]'));
  var search = document.querySelector('.filters input[type=search]');
  var shown = document.getElementById('shown-count');
  function apply(initial) {
    var on = {}; boxes.forEach(function (b) { on[b.dataset.verdict] = b.checked; });
    var words = (search.value || '').toLowerCase().split(/\s+/).filter(Boolean);
    var n = 0;
    rows.forEach(function (r) {
      var text = r.textContent.toLowerCase();
      var ok = on[r.dataset.verdict] !== false && words.every(function (w) { return text.indexOf(w) >= 0; });
      r.hidden = !ok; if (ok) n++;
    });
    shown.textContent = n + ' of ' + rows.length + ' cases shown';
    var q = boxes.filter(function (b) { return !b.checked; }).map(function (b) { return b.dataset.verdict; });
    var hash = (q.length ? 'hide=' + q.join(',') : '') + (search.value ? (q.length ? '&' : '') + 'q=' +
               encodeURIComponent(search.value) : '');
    if (initial !== true) history.replaceState(null, '', hash ? '#' + hash : location.pathname + location.search);
  }
  boxes.forEach(function (b) { b.addEventListener('change', apply); });
  search.addEventListener('input', apply);
  var headers = Array.prototype.slice.call(table.querySelectorAll('th.sortable'));
  headers.forEach(function (th) {
    th.addEventListener('click', function () {
      var col = Array.prototype.indexOf.call(th.parentNode.children, th);
      var dir = th.getAttribute('aria-sort') === 'ascending' ? 'descending' : 'ascending';
      headers.forEach(function (h) { h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', dir);
      var key = function (r) {
        var c = r.children[col];
        return c.dataset.sort !== undefined ? c.dataset.sort : c.textContent.trim();
      };
      var num = th.dataset.type === 'number';
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var d = num ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
        return dir === 'ascending' ? d : -d;
      });
      var parent = rows[0] ? rows[0].parentNode : null;
      rows.forEach(function (r) { parent.appendChild(r); });
    });
  });
  var m = /hide=([^&]*)/.exec(location.hash), s = /q=([^&]*)/.exec(location.hash);
  if (m) m[1].split(',').forEach(function (v) {
    boxes.forEach(function (b) { if (b.dataset.verdict === v) b.checked = false; });
  });
  if (s) search.value = decodeURIComponent(s[1]);
  apply(true);
})();
"""
