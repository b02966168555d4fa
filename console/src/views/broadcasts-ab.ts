/**
 * A broadcast's A/B test in the console (DESIGN §9.8), the views: the draft form's fieldset
 * (2–4 variants, test share, metric, wait) and the progress page's side-by-side view (an inline
 * SVG of each variant's rates, a table of its counts, a "send this one now" button per variant
 * while the broadcast waits for its winner). The form's values are pages/broadcasts-ab.ts.
 */
import type { AbTest, Broadcast } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { AB_FIELDS, WAIT_UNITS, type AbValues, type VariantField, type WaitUnit } from "../pages/broadcasts-ab.js";
import { html, trusted, type Html } from "./html.js";

const n = (v: bigint | undefined) => Number(v ?? 0n);

// Named with the variant ("Variant A subject"), never just "Subject": the broadcast's own fields keep their labels to themselves.
const LABELS: Record<VariantField, string> = { subject: "subject", fromName: "sender name", previewText: "preview text", html: "HTML" };
export const variantName = (i: number) => String.fromCharCode(65 + i);

const selected = (on: boolean) => (on ? html` selected` : "");

/** The draft form's A/B fieldset. */
export function abFormView(v: AbValues): Html {
  const slots = v.variants.map((slot, i) => {
    const fields = AB_FIELDS.map((f) => {
      const id = `f-ab${f}${i}`;
      const name = `ab${f[0].toUpperCase()}${f.slice(1)}${i}`;
      return f === "html"
        ? html`<div class="field"><label for="${id}">Variant ${variantName(i)} ${LABELS[f]}</label><textarea id="${id}" name="${name}" rows="4">${slot[f]}</textarea></div>`
        : html`<div class="field"><label for="${id}">Variant ${variantName(i)} ${LABELS[f]}</label><input id="${id}" name="${name}" value="${slot[f]}" style="width:100%"></div>`;
    });
    return html`<fieldset class="field" data-ab-variant="${i}"><legend>Variant ${variantName(i)}${i >= 2 ? " (optional)" : ""}</legend>${fields}</fieldset>`;
  });
  const unitOptions = (Object.keys(WAIT_UNITS) as WaitUnit[]).map((u) => html`<option value="${u}"${selected(v.waitUnit === u)}>${u}</option>`);
  const open = v.enabled || v.variants.some((slot) => AB_FIELDS.some((f) => slot[f].trim() !== ""));
  return html`<details id="ab-test"${open ? html` open` : ""}><summary>A/B test${v.enabled ? " (on)" : ""}</summary><fieldset class="field"><legend>A/B test</legend>
<div class="field check"><input type="checkbox" id="f-ab" name="ab"${v.enabled ? html` checked` : ""} aria-describedby="h-ab"><label for="f-ab">Test variants on part of the audience first</label></div>
<p class="muted" id="h-ab" style="margin:0 0 .5rem">2 to 4 variants, each changing at least one of subject, from name, preview text or HTML (empty fields: the broadcast's own). The test share is split evenly among them at random; after the wait, the variant with the best unique open (or click) rate goes to everyone else.</p>
<div class="grid">${slots}</div>
<div class="grid">
<div class="field"><label for="f-abTestShare">Test share (% of the audience, 5–50)</label><input id="f-abTestShare" name="abTestShare" type="number" min="5" max="50" step="any" value="${v.testSharePercent}"></div>
<div class="field"><label for="f-abMetric">Winner by</label><select id="f-abMetric" name="abMetric">
<option value="opens"${selected(v.metric === "opens")}>Unique open rate</option><option value="clicks"${selected(v.metric === "clicks")}>Unique click rate</option></select></div>
<div class="field"><label for="f-abWaitFor">Wait before choosing (5 minutes to 7 days)</label><div class="row"><input id="f-abWaitFor" name="abWaitFor" type="number" min="0" step="any" value="${v.waitFor}">
<label for="f-abWaitUnit" class="sr-only">Unit</label><select id="f-abWaitUnit" name="abWaitUnit">${unitOptions}</select></div></div>
</div></fieldset></details>`;
}

const pct = (part: number, whole: number) => (whole > 0 ? part / whole : 0);
const pctText = (r: number) => `${(Math.round(r * 1000) / 10).toFixed(1)} %`;

interface VariantRow {
  name: string;
  label: string;
  recipients: number;
  delivered: number;
  uniqueOpens: number;
  uniqueClicks: number;
  openRate: number;
  clickRate: number;
}

function rowsOf(ab: AbTest, b: Broadcast): VariantRow[] {
  return ab.variants.map((v, i) => {
    const s = ab.stats[i];
    const delivered = n(s?.delivered);
    const changes = [v.subject !== undefined ? `subject “${v.subject}”` : "", v.fromName !== undefined ? `from “${v.fromName}”` : "", v.previewText !== undefined ? `preview “${v.previewText}”` : "", v.html !== undefined ? "its own HTML" : ""].filter(Boolean);
    return {
      name: variantName(i),
      label: changes.join(", ") || `as “${b.subject}”`,
      recipients: n(s?.recipients),
      delivered,
      uniqueOpens: n(s?.uniqueOpens),
      uniqueClicks: n(s?.uniqueClicks),
      openRate: pct(n(s?.uniqueOpens), delivered),
      clickRate: pct(n(s?.uniqueClicks), delivered),
    };
  });
}

/** Bars of each variant's open and click rates, side by side (the scale: the best rate, at least 10 %). */
export function abChart(rows: VariantRow[], title: string): Html {
  // No viewBox: x and widths are percentages of the drawn width and y is in CSS pixels, so
  // the labels keep their pixel size at any width (a 600-unit viewBox shrunk to a phone's
  // 335 px drew them at about 6 px).
  const H = 220;
  const top = 22;
  const bottom = 40;
  const max = Math.max(0.1, ...rows.flatMap((r) => [r.openRate, r.clickRate]));
  const group = 100 / Math.max(1, rows.length);
  const barW = Math.min(10, group / 3);
  const gap = Math.min(1.5, group / 20);
  const y = (r: number) => top + (H - top - bottom) * (1 - r / max);
  const pct = (n: number) => `${n.toFixed(2)}%`;
  const bars = rows.map((r, i) => {
    const centre = i * group + group / 2;
    const bar = (rate: number, x: number, colour: string, what: string, pattern = "") =>
      html`<rect x="${pct(x)}" y="${y(rate).toFixed(1)}" width="${pct(barW)}" height="${(H - bottom - y(rate)).toFixed(1)}" fill="${colour}"${pattern ? html` stroke="#000" stroke-dasharray="${pattern}"` : ""}><title>Variant ${r.name} ${what} ${pctText(rate)}</title></rect>
<text x="${pct(x + barW / 2)}" y="${(y(rate) - 5).toFixed(1)}" text-anchor="middle" font-size="${AB_CHART_VALUE_PX}">${shortPct(rate)}</text>`;
    return html`${bar(r.openRate, centre - barW - gap / 2, "#b45309", "opens")}${bar(r.clickRate, centre + gap / 2, "#7e22ce", "clicks", "4 2")}
<text x="${pct(centre)}" y="${H - bottom + 20}" text-anchor="middle" font-size="${AB_CHART_LABEL_PX}" font-weight="600">Variant ${r.name}</text>`;
  });
  return html`<svg width="100%" height="${H}" role="img" aria-labelledby="ab-chart-t" style="display:block;max-width:600px;overflow:visible" data-ab-chart>
<title id="ab-chart-t">${title}: ${rows.map((r) => `variant ${r.name} opens ${pctText(r.openRate)}, clicks ${pctText(r.clickRate)}`).join("; ")}</title>
<line x1="0" x2="100%" y1="${H - bottom}" y2="${H - bottom}" stroke="#6b7280"/>${bars}</svg>
<p class="muted" style="margin:.25rem 0"><span style="display:inline-block;width:.9rem;height:.9rem;background:#b45309"></span> unique open rate · <span style="display:inline-block;width:.9rem;height:.9rem;background:#7e22ce;outline:1px dashed #000"></span> unique click rate (per delivered message)</p>`;
}

/** The chart's text sizes in CSS pixels (drawn at that size whatever the width). */
export const AB_CHART_VALUE_PX = 12;
export const AB_CHART_LABEL_PX = 14;
/** A rate above its bar: short enough for a narrow bar ("12.5%", "100%"). */
const shortPct = (r: number) => `${Math.round(r * 1000) / 10}%`;

const STATE_TEXT: Record<string, string> = {
  draft: "Not sending yet.",
  testing: "The test share is going out.",
  waiting: "Waiting for the winner",
  decided: "The winner goes to the rest of the audience.",
  cancelled: "Cancelled during the wait: the rest of the audience is not sent.",
};

/**
 * The progress page's A/B section. `chooseAction` (the console's form URL) and `csrf` (the
 * hidden input's markup) give each variant a "send this one now" button while the broadcast
 * waits for its winner; `formatTime` is the layout's (markup).
 */
export function abProgressView(b: Broadcast, opts: { chooseAction?: string; csrf?: string; formatTime: (d?: Date) => string }): Html {
  const ab = b.abTest;
  if (!ab) return html``;
  const rows = rowsOf(ab, b);
  const waiting = ab.state === "waiting" && ab.winner === undefined;
  const winner = ab.winner;
  const waitUntil = ab.waitUntil ? new Date(Number(ab.waitUntil.seconds) * 1000) : undefined;
  const rate = ab.metric === "clicks" ? "click" : "open";
  const state = ab.state === "waiting"
    ? html`${STATE_TEXT.waiting}: the ${rate} rate picks it at ${trusted(opts.formatTime(waitUntil))}, unless you choose one first.`
    : (STATE_TEXT[ab.state] ?? "");
  const chosen = winner !== undefined
    ? html`<p data-ab-winner="${winner}"><strong>Winner: variant ${variantName(winner)}</strong> (${ab.winnerChosenBy === "user" ? "chosen by a user" : `best unique ${rate} rate`}).</p>`
    : "";
  const csrf = trusted(opts.csrf ?? "");
  const table = rows.map((r, i) => html`<tr${winner === i ? html` class="winner"` : ""}><th scope="row">Variant ${r.name}${winner === i ? " ★" : ""}</th><td data-label="Changes">${r.label}</td>
<td class="num" data-label="Recipients">${r.recipients}</td><td class="num" data-label="Delivered">${r.delivered}</td><td class="num" data-label="Unique opens">${r.uniqueOpens}</td><td class="num" data-label="Open rate">${pctText(r.openRate)}</td><td class="num" data-label="Unique clicks">${r.uniqueClicks}</td><td class="num" data-label="Click rate">${pctText(r.clickRate)}</td>
${waiting && opts.chooseAction ? html`<td class="ab-choose"><form method="post" action="${opts.chooseAction}" data-confirm="Send variant ${r.name} to the rest of the audience now?">${csrf}<input type="hidden" name="variant" value="${i}"><button type="submit" class="secondary" style="white-space:nowrap" data-ab-choose="${i}">Send variant ${r.name} now</button></form></td>` : waiting ? html`<td></td>` : ""}</tr>`);
  return html`<section aria-labelledby="ab-h" id="ab"><h2 id="ab-h">A/B test</h2>
<p class="muted">${Math.round(ab.testShare * 1000) / 10} % of the audience, split evenly among ${rows.length} variants; the winner by unique ${rate} rate after ${waitText(Number(ab.waitForSeconds))}.</p>
<p data-ab-state="${ab.state}">${state}</p>${chosen}
<div class="card">${abChart(rows, `A/B test of ${b.name}`)}</div>
<div class="table-wrap"><table class="data stack ab-variants"><caption class="sr-only">Variants of the A/B test over the test share</caption>
<thead><tr><th>Variant</th><th>Changes</th><th class="num">Recipients</th><th class="num">Delivered</th><th class="num">Unique opens</th><th class="num">Open rate</th><th class="num">Unique clicks</th><th class="num">Click rate</th>${waiting ? html`<th>Choose</th>` : ""}</tr></thead>
<tbody>${table}</tbody></table></div></section>`;
}

function waitText(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} ${seconds === 86_400 ? "day" : "days"}`;
  if (seconds % 3600 === 0) return `${seconds / 3600} ${seconds === 3600 ? "hour" : "hours"}`;
  if (seconds % 60 === 0) return `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}
