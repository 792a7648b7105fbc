// volbench HTML report: filter boxes above long tables. No network, no libraries.
"use strict";
document.querySelectorAll("input.filter").forEach(function (box) {
  var table = document.getElementById(box.dataset.table);
  if (!table) { return; }
  box.addEventListener("input", function () {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    table.querySelectorAll("tbody tr").forEach(function (row) {
      var text = row.textContent.toLowerCase();
      var keep = words.every(function (w) { return text.indexOf(w) !== -1; });
      row.classList.toggle("hidden", !keep);
    });
  });
});
