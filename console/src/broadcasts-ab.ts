/**
 * A broadcast's A/B test in the console (DESIGN §9.8): the draft form's fieldset (2–4
 * variants, test share, metric, wait) and the progress page's side-by-side view (an inline
 * SVG of each variant's rates, a table of its counts, a "send this one now" button per
 * variant while the broadcast waits for its winner). The rules are the broadcast service's:
 * the form passes what was typed and shows the service's refusal.
 */
import type { AbTest, Broadcast } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { escapeHtml } from "@mailroom/http/page.js";
import { refusal } from "@mailroom/http/errors.js";

type Form = Record<string, string | string[] | undefined>;
const str = (body: unknown, name: string): string => {
  const v = (body as Form | undefined)?.[name];
  return typeof v === "string" ? v : Array.isArray(v) ? String(v[0] ?? "") : "";
};
const n = (v: bigint | undefined) => Number(v ?? 0n);

export const AB_SLOTS = 4;
const FIELDS = ["subject", "fromName", "previewText", "html"] as const;
type VariantField = (typeof FIELDS)[number];
const UNITS = { minutes: 60, hours: 3600, days: 86_400 } as const;
type Unit = keyof typeof UNITS;

/** The A/B part of the draft form, as typed (strings, so a refused form comes back as it was). */
export interface AbValues {
  enabled: boolean;
  variants: Array<Record<VariantField, string>>;
  /** Percent of the audience, 5–50. */
  testSharePercent: string;
  metric: string;
  waitFor: string;
  waitUnit: Unit;
}

const emptyVariant = (): Record<VariantField, string> => ({ subject: "", fromName: "", previewText: "", html: "" });

export const NO_AB: AbValues = {
  enabled: false,
  variants: Array.from({ length: AB_SLOTS }, emptyVariant),
  testSharePercent: "20",
  metric: "opens",
  waitFor: "4",
  waitUnit: "hours",
};

/** A saved broadcast's test as form values (the wait in the largest unit that divides it). */
export function abValuesOf(b: Broadcast): AbValues {
  const ab = b.abTest;
  if (!ab) return NO_AB;
  const seconds = Number(ab.waitForSeconds);
  const unit: Unit = seconds % UNITS.days === 0 ? "days" : seconds % UNITS.hours === 0 ? "hours" : "minutes";
  return {
    enabled: true,
    variants: Array.from({ length: AB_SLOTS }, (_, i) => {
      const v = ab.variants[i];
      return v ? { subject: v.subject ?? "", fromName: v.fromName ?? "", previewText: v.previewText ?? "", html: v.html ?? "" } : emptyVariant();
    }),
    testSharePercent: String(Math.round(ab.testShare * 10_000) / 100),
    metric: ab.metric,
    waitFor: String(unit === "minutes" ? Math.round((seconds / 60) * 100) / 100 : seconds / UNITS[unit]),
    waitUnit: unit,
  };
}

export function abFromForm(body: unknown): AbValues {
  const unit = str(body, "abWaitUnit");
  return {
    enabled: str(body, "ab") === "on",
    variants: Array.from({ length: AB_SLOTS }, (_, i) => {
      const v = emptyVariant();
      for (const f of FIELDS) v[f] = str(body, `ab${f[0].toUpperCase()}${f.slice(1)}${i}`);
      return v;
    }),
    testSharePercent: str(body, "abTestShare").trim(),
    metric: str(body, "abMetric"),
    waitFor: str(body, "abWaitFor").trim(),
    waitUnit: unit in UNITS ? (unit as Unit) : "hours",
  };
}

/**
 * The test for the broadcast service, or none when the box is off. A variant slot left empty is
 * no variant; an empty field is the broadcast's own. Numbers the form cannot read go through
 * as NaN / -1, so the service's refusal names the field.
 */
export function abRpc(v: AbValues) {
  if (!v.enabled) {
    // Variants typed with the test switched off would be dropped without a word: say so instead.
    if (v.variants.some((slot) => FIELDS.some((f) => slot[f].trim() !== ""))) {
      throw refusal({ code: "invalid_payload", status: 400, message: "The A/B test has variants but is switched off: tick “Test variants on part of the audience first”, or clear the variants." });
    }
    return undefined;
  }
  const variants = v.variants
    .filter((slot) => FIELDS.some((f) => slot[f].trim() !== ""))
    .map((slot) => Object.fromEntries(FIELDS.filter((f) => slot[f].trim() !== "").map((f) => [f, slot[f]])));
  const share = v.testSharePercent === "" ? Number.NaN : Number(v.testSharePercent) / 100;
  const wait = v.waitFor === "" ? Number.NaN : Number(v.waitFor) * UNITS[v.waitUnit];
  return {
    variants,
    testShare: Number.isFinite(share) ? share : -1,
    metric: v.metric,
    waitForSeconds: BigInt(Number.isFinite(wait) && Number.isInteger(Math.round(wait)) ? Math.round(wait) : -1),
  };
}

// Named with the variant ("Variant A subject"), never just "Subject": the broadcast's own fields keep their labels to themselves.
const LABELS: Record<VariantField, string> = { subject: "subject", fromName: "sender name", previewText: "preview text", html: "HTML" };
export const variantName = (i: number) => String.fromCharCode(65 + i);

/** The draft form's A/B fieldset. */
export function abFormHtml(v: AbValues): string {
  const slots = v.variants
    .map((slot, i) => {
      const fields = FIELDS.map((f) => {
        const id = `f-ab${f}${i}`;
        const name = `ab${f[0].toUpperCase()}${f.slice(1)}${i}`;
        return f === "html"
          ? `<div class="field"><label for="${id}">Variant ${variantName(i)} ${LABELS[f]}</label><textarea id="${id}" name="${name}" rows="4">${escapeHtml(slot[f])}</textarea></div>`
          : `<div class="field"><label for="${id}">Variant ${variantName(i)} ${LABELS[f]}</label><input id="${id}" name="${name}" value="${escapeHtml(slot[f])}" style="width:100%"></div>`;
      }).join("");
      return `<fieldset class="field" data-ab-variant="${i}"><legend>Variant ${variantName(i)}${i >= 2 ? " (optional)" : ""}</legend>${fields}</fieldset>`;
    })
    .join("");
  const unitOptions = (Object.keys(UNITS) as Unit[]).map((u) => `<option value="${u}"${v.waitUnit === u ? " selected" : ""}>${u}</option>`).join("");
  const open = v.enabled || v.variants.some((slot) => FIELDS.some((f) => slot[f].trim() !== ""));
  return `<details id="ab-test"${open ? " open" : ""}><summary>A/B test${v.enabled ? " (on)" : ""}</summary><fieldset class="field"><legend>A/B test</legend>
<div class="field check"><input type="checkbox" id="f-ab" name="ab"${v.enabled ? " checked" : ""} aria-describedby="h-ab"><label for="f-ab">Test variants on part of the audience first</label></div>
<p class="muted" id="h-ab" style="margin:0 0 .5rem">2 to 4 variants, each changing at least one of subject, from name, preview text or HTML (empty fields: the broadcast's own). The test share is split evenly among them at random; after the wait, the variant with the best unique open (or click) rate goes to everyone else.</p>
<div class="grid">${slots}</div>
<div class="grid">
<div class="field"><label for="f-abTestShare">Test share (% of the audience, 5–50)</label><input id="f-abTestShare" name="abTestShare" type="number" min="5" max="50" step="any" value="${escapeHtml(v.testSharePercent)}"></div>
<div class="field"><label for="f-abMetric">Winner by</label><select id="f-abMetric" name="abMetric">
<option value="opens"${v.metric === "opens" ? " selected" : ""}>Unique open rate</option><option value="clicks"${v.metric === "clicks" ? " selected" : ""}>Unique click rate</option></select></div>
<div class="field"><label for="f-abWaitFor">Wait before choosing (5 minutes to 7 days)</label><div class="row"><input id="f-abWaitFor" name="abWaitFor" type="number" min="0" step="any" value="${escapeHtml(v.waitFor)}">
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
export function abChart(rows: VariantRow[], title: string): string {
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
  const bars = rows
    .map((r, i) => {
      const centre = i * group + group / 2;
      const bar = (rate: number, x: number, colour: string, what: string, pattern = "") =>
        `<rect x="${pct(x)}" y="${y(rate).toFixed(1)}" width="${pct(barW)}" height="${(H - bottom - y(rate)).toFixed(1)}" fill="${colour}"${pattern ? ` stroke="#000" stroke-dasharray="${pattern}"` : ""}><title>Variant ${r.name} ${what} ${pctText(rate)}</title></rect>
<text x="${pct(x + barW / 2)}" y="${(y(rate) - 5).toFixed(1)}" text-anchor="middle" font-size="${AB_CHART_VALUE_PX}">${shortPct(rate)}</text>`;
      return `${bar(r.openRate, centre - barW - gap / 2, "#b45309", "opens")}${bar(r.clickRate, centre + gap / 2, "#7e22ce", "clicks", "4 2")}
<text x="${pct(centre)}" y="${H - bottom + 20}" text-anchor="middle" font-size="${AB_CHART_LABEL_PX}" font-weight="600">Variant ${r.name}</text>`;
    })
    .join("");
  return `<svg width="100%" height="${H}" role="img" aria-labelledby="ab-chart-t" style="display:block;max-width:600px;overflow:visible" data-ab-chart>
<title id="ab-chart-t">${escapeHtml(title)}: ${rows.map((r) => `variant ${r.name} opens ${pctText(r.openRate)}, clicks ${pctText(r.clickRate)}`).join("; ")}</title>
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
 * The progress page's A/B section. `chooseAction` (the console's form URL) and `csrf` give
 * each variant a "send this one now" button while the broadcast waits for its winner.
 */
export function abProgressHtml(b: Broadcast, opts: { chooseAction?: string; csrf?: string; formatTime: (d?: Date) => string }): string {
  const ab = b.abTest;
  if (!ab) return "";
  const rows = rowsOf(ab, b);
  const waiting = ab.state === "waiting" && ab.winner === undefined;
  const winner = ab.winner;
  const waitUntil = ab.waitUntil ? new Date(Number(ab.waitUntil.seconds) * 1000) : undefined;
  // Constant texts and formatTime's markup only: nothing typed by a user.
  const state =
    ab.state === "waiting" ? `${STATE_TEXT.waiting}: the ${ab.metric === "clicks" ? "click" : "open"} rate picks it at ${opts.formatTime(waitUntil)}, unless you choose one first.` : (STATE_TEXT[ab.state] ?? "");
  const chosen =
    winner !== undefined
      ? `<p data-ab-winner="${winner}"><strong>Winner: variant ${variantName(winner)}</strong> (${ab.winnerChosenBy === "user" ? "chosen by a user" : `best unique ${ab.metric === "clicks" ? "click" : "open"} rate`}).</p>`
      : "";
  const table = rows
    .map(
      (r, i) => `<tr${winner === i ? ' class="winner"' : ""}><th scope="row">Variant ${r.name}${winner === i ? " ★" : ""}</th><td data-label="Changes">${escapeHtml(r.label)}</td>
<td class="num" data-label="Recipients">${r.recipients}</td><td class="num" data-label="Delivered">${r.delivered}</td><td class="num" data-label="Unique opens">${r.uniqueOpens}</td><td class="num" data-label="Open rate">${pctText(r.openRate)}</td><td class="num" data-label="Unique clicks">${r.uniqueClicks}</td><td class="num" data-label="Click rate">${pctText(r.clickRate)}</td>
${waiting && opts.chooseAction ? `<td class="ab-choose"><form method="post" action="${opts.chooseAction}" data-confirm="Send variant ${r.name} to the rest of the audience now?">${opts.csrf ?? ""}<input type="hidden" name="variant" value="${i}"><button type="submit" class="secondary" style="white-space:nowrap" data-ab-choose="${i}">Send variant ${r.name} now</button></form></td>` : waiting ? "<td></td>" : ""}</tr>`,
    )
    .join("");
  return `<section aria-labelledby="ab-h" id="ab"><h2 id="ab-h">A/B test</h2>
<p class="muted">${Math.round(ab.testShare * 1000) / 10} % of the audience, split evenly among ${rows.length} variants; the winner by unique ${ab.metric === "clicks" ? "click" : "open"} rate after ${escapeHtml(waitText(Number(ab.waitForSeconds)))}.</p>
<p data-ab-state="${escapeHtml(ab.state)}">${state}</p>${chosen}
<div class="card">${abChart(rows, `A/B test of ${b.name}`)}</div>
<div class="table-wrap"><table class="data stack ab-variants"><caption class="sr-only">Variants of the A/B test over the test share</caption>
<thead><tr><th>Variant</th><th>Changes</th><th class="num">Recipients</th><th class="num">Delivered</th><th class="num">Unique opens</th><th class="num">Open rate</th><th class="num">Unique clicks</th><th class="num">Click rate</th>${waiting ? "<th>Choose</th>" : ""}</tr></thead>
<tbody>${table}</tbody></table></div></section>`;
}

function waitText(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} ${seconds === 86_400 ? "day" : "days"}`;
  if (seconds % 3600 === 0) return `${seconds / 3600} ${seconds === 3600 ? "hour" : "hours"}`;
  if (seconds % 60 === 0) return `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}
