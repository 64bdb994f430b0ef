// Small SVG line charts of the dashboard's series over the last hour.
import { h, s } from "../dom.js";
import { formatDuration } from "../format.js";
import { pathData, plot, span, type Point, type Series } from "../series.js";

const WIDTH = 320;
const HEIGHT = 90;

function figure(n: number): string {
  return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
}

/** A card with the line of `series` over the hour before `endMs`, its latest value and
 * the value at its top. */
export function lineChart(points: Point[], series: Series, label: string, unit: string, help: string, endMs: number): HTMLElement {
  const shown = span(points, endMs);
  const drawn = plot(points, series, endMs, WIDTH, HEIGHT, shown, 4);
  const latest = [...points].reverse().find((p) => typeof p[series] === "number")?.[series];
  return h(
    "div",
    { class: "card chart", title: help, "data-testid": "chart", "data-series": series },
    h("div", { class: "label" }, label, " ", h("strong", {}, latest === undefined ? "—" : `${figure(latest)}${unit}`)),
    s(
      "svg",
      { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: "none", role: "img", "aria-label": `${label} over the last hour` },
      s("line", { x1: 0, y1: HEIGHT, x2: WIDTH, y2: HEIGHT, class: "axis" }),
      s("line", { x1: 0, y1: 0, x2: WIDTH, y2: 0, class: "grid" }),
      s("path", {
        d: pathData(drawn.xy),
        class: "chart-line",
        fill: "none",
        "vector-effect": "non-scaling-stroke",
        "data-testid": "chart-line",
        "data-points": drawn.xy.length,
      }),
      drawn.xy.length === 1 && s("circle", { cx: drawn.xy[0]?.[0] ?? 0, cy: drawn.xy[0]?.[1] ?? 0, r: 2, class: "chart-dot" }),
    ),
    h("div", { class: "small chart-scale" }, h("span", {}, `−${formatDuration(shown)}`), h("span", {}, `top ${figure(drawn.max)}${unit}`), h("span", {}, "now")),
  );
}
