// Cursor readout: the data coordinates under the pointer, read back from the axes'
// data-* attributes (the charts themselves are static SVG and need no script).
(function () {
  "use strict";
  function fmt(v) {
    var a = Math.abs(v);
    if (a >= 1e4 || (a > 0 && a < 1e-3)) { return v.toExponential(2); }
    return String(Math.round(v * 1000) / 1000);
  }
  function back(svg, axis, p) {
    var d0 = parseFloat(svg.dataset[axis + "0"]), d1 = parseFloat(svg.dataset[axis + "1"]);
    var p0 = parseFloat(svg.dataset["p" + axis + "0"]), p1 = parseFloat(svg.dataset["p" + axis + "1"]);
    var v = d0 + (p - p0) / (p1 - p0) * (d1 - d0);
    return svg.dataset[axis + "log"] === "true" ? Math.pow(10, v) : v;
  }
  var charts = document.querySelectorAll("figure.chart");
  Array.prototype.forEach.call(charts, function (fig) {
    var svg = fig.querySelector("svg");
    var out = fig.querySelector("output.readout");
    var cursor = svg.querySelector("line.cursor");
    if (!svg || !out || !cursor) { return; }
    svg.addEventListener("mousemove", function (ev) {
      var pt = svg.createSVGPoint();
      pt.x = ev.clientX; pt.y = ev.clientY;
      var m = svg.getScreenCTM();
      if (!m) { return; }
      var p = pt.matrixTransform(m.inverse());
      var inside = p.x >= parseFloat(svg.dataset.px0) && p.x <= parseFloat(svg.dataset.px1);
      cursor.style.visibility = inside ? "visible" : "hidden";
      if (!inside) { out.textContent = ""; return; }
      cursor.setAttribute("x1", p.x); cursor.setAttribute("x2", p.x);
      cursor.setAttribute("y1", svg.dataset.py1); cursor.setAttribute("y2", svg.dataset.py0);
      var x = fig.dataset.kind === "bars" ? "" : "x " + fmt(back(svg, "x", p.x)) + ", ";
      out.textContent = x + "y " + fmt(back(svg, "y", p.y));
    });
    svg.addEventListener("mouseleave", function () {
      cursor.style.visibility = "hidden";
      out.textContent = "";
    });
  });
  // For tests and scripts: what the page drew.
  window.ftlabCharts = Array.prototype.map.call(charts, function (fig) {
    return {
      id: fig.dataset.chart,
      series: Array.prototype.map.call(fig.querySelectorAll(".series"), function (s) {
        return { name: s.dataset.series, points: parseInt(s.dataset.points, 10) };
      })
    };
  });
}());
