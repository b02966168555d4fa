/**
 * The frame of the console's charts: the marks (bars, lines, grid) are an SVG stretched over
 * the plot area (viewBox 0 0 1000 <height>, preserveAspectRatio="none", strokes that do not
 * scale), and every piece of text (axis ticks, row names, values) is HTML positioned over it
 * in percent. Text in an SVG scales with its viewBox: a 720-unit chart on a 375 px phone drew
 * 11-unit labels about 5 px tall. HTML text keeps its CSS size at every width.
 *
 *   chartFrame({ svg, ticks, height, className? }): Html
 *       svg    the <svg> element (role="img" and its label are the caller's); its marks use
 *              x in 0…1000 and y in 0…VIEW_H (or its own viewBox height)
 *       ticks  text labels: { text, x?, y?, kind } with x and y as fractions of the plot
 *              (0…1; y from the top); kind "y" sits left of the plot, "x" below it, "v" at
 *              (x, y) inside it; `minor` ones are left out at phone width, `align` says
 *              which end of an x label the position is (default: its middle)
 *   legendView(items): an HTML legend with a swatch per series
 *
 * Styles are in layout.ts (.chart-plot, .tick, .legend).
 */
import { html, trusted, type Html } from "./html.js";

/** Width of every chart's viewBox; its height is the caller's. */
export const VIEW_W = 1000;

export interface Tick {
  text: string;
  kind: "x" | "y" | "v";
  /** 0…1 of the plot's width. */
  x?: number;
  /** 0…1 of the plot's height, from the top. */
  y?: number;
  minor?: boolean;
  align?: "start" | "middle" | "end";
  /** Extra attributes, e.g. data-start: fixed markup written in code, never data. */
  attrs?: string;
}

const pct = (f: number) => `${(Math.min(1, Math.max(0, f)) * 100).toFixed(3)}%`;

export function chartFrame(opts: { svg: Html; ticks: Tick[]; height: string; className?: string; gutter?: string }): Html {
  const ticks = opts.ticks.map((t) => {
    const pos = [t.x !== undefined ? `left:${pct(t.x)}` : "", t.y !== undefined ? `top:${pct(t.y)}` : ""].filter(Boolean).join(";");
    const cls = ["tick", t.kind, t.minor ? "minor" : "", t.align && t.align !== "middle" ? t.align : ""].filter(Boolean).join(" ");
    return html`<span class="${cls}" style="${pos}"${t.attrs ? trusted(` ${t.attrs}`) : ""}>${t.text}</span>`;
  });
  const style = [`--plot-h:${opts.height}`, opts.gutter ? `--gutter:${opts.gutter}` : ""].filter(Boolean).join(";");
  // The labels repeat what the chart's accessible name and the table below already say.
  return html`<div class="chart-plot${opts.className ? ` ${opts.className}` : ""}" style="${style}">${opts.svg}<div class="ticks" aria-hidden="true">${ticks}</div></div>`;
}

export function legendView(items: ReadonlyArray<{ label: string; colour: string; dash?: string }>): Html {
  return html`<ul class="legend">${items.map((s) =>
    html`<li><svg width="28" height="10" aria-hidden="true" focusable="false"><line x1="0" y1="5" x2="28" y2="5" stroke="${s.colour}" stroke-width="${s.dash === undefined ? 10 : 3}"${s.dash ? html` stroke-dasharray="${s.dash}"` : ""}/></svg> ${s.label}</li>`)}</ul>`;
}
