// Usage pages: draw each table's chart with the vendored Chart.js (static/vendor/chartjs).
// The figures come from a json_script block beside each canvas; the table below holds them too.
(function () {
  "use strict";
  const COLORS = ["#3b6fd8", "#d8843b", "#3ba776", "#b03bd8"];

  function draw(canvas) {
    const source = document.getElementById(canvas.dataset.chart);
    if (!source || !window.Chart) return;
    const data = JSON.parse(source.textContent);
    const datasets = data.series.map((series, index) => ({
      label: series.label,
      data: series.data,
      yAxisID: index === 0 ? "y" : "y1",
      borderColor: COLORS[index % COLORS.length],
      backgroundColor: COLORS[index % COLORS.length] + "99",
      tension: 0.2,
      pointRadius: data.labels.length > 60 ? 0 : 2,
    }));
    new window.Chart(canvas, {
      type: data.kind,
      data: { labels: data.labels, datasets: datasets },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        interaction: { mode: "index", intersect: false },
        scales: {
          // A bar chart's few categories are each labelled (at 390 px one of three was skipped);
          // a long series of days may skip some.
          x: { ticks: { autoSkip: data.kind !== "bar", maxRotation: 90 } },
          y: { beginAtZero: true, position: "left", title: { display: true, text: data.series[0].label } },
          y1: {
            beginAtZero: true,
            position: "right",
            grid: { drawOnChartArea: false },
            display: data.series.length > 1,
            title: { display: data.series.length > 1, text: data.series.length > 1 ? data.series[1].label : "" },
          },
        },
      },
    });
    canvas.dataset.drawn = "true";
  }

  function init() {
    document.querySelectorAll("canvas[data-chart]").forEach(draw);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
