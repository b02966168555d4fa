/**
 * A/B tests (DESIGN §9.8), the pure parts: the settings' checks, each recipient's variant,
 * the rates and the winner. No I/O: sending.ts and outcomes.ts apply them.
 */
import { createHash } from "node:crypto";
import { badRequest } from "@mailroom/kit/errors.js";
import {
  AB_MAX_SHARE,
  AB_MAX_VARIANTS,
  AB_MAX_WAIT_SECONDS,
  AB_METRICS,
  AB_MIN_SHARE,
  AB_MIN_VARIANTS,
  AB_MIN_WAIT_SECONDS,
  AB_VARIANT_FIELDS,
  HTML_MAX_BYTES,
  abStatsKey,
  emptyAbCounts,
  type AbMetric,
  type AbTest,
  type AbTestConfig,
  type AbVariant,
  type AbVariantCounts,
} from "./model.js";

/** An A/B test as a request carries it (absent fields: not given). */
export interface AbTestInput {
  variants?: Array<Partial<Record<(typeof AB_VARIANT_FIELDS)[number], string | undefined>>>;
  testShare?: number;
  metric?: string;
  waitForSeconds?: number;
}

const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;
const invalidAbTest = (field: string, message: string) =>
  badRequest("invalid_payload", `abTest.${field} ${message}`);

/**
 * The test's settings as given, checked: 2–4 variants, each different from the broadcast in
 * at least one field; testShare 0.05–0.5; metric opens or clicks; waitFor between
 * `minWaitSeconds` (5 min unless the deployment lowers it for tests) and 7 days. Every
 * refusal is 400 `invalid_payload` naming the field.
 */
export function validateAbTest(
  input: AbTestInput,
  base: { subject: string; fromName: string; previewText: string; html: string },
  minWaitSeconds = AB_MIN_WAIT_SECONDS,
): AbTestConfig {
  const list = input.variants ?? [];
  if (list.length < AB_MIN_VARIANTS || list.length > AB_MAX_VARIANTS) {
    throw invalidAbTest("variants", `must hold ${AB_MIN_VARIANTS} to ${AB_MAX_VARIANTS} variants`);
  }
  const variants = list.map((raw, i): AbVariant => {
    const v: AbVariant = {};
    for (const field of AB_VARIANT_FIELDS) {
      const value = raw[field];
      if (value === undefined) continue;
      if (typeof value !== "string") throw invalidAbTest(`variants[${i}].${field}`, "must be a string");
      if (field === "html") {
        if (!value.trim()) throw invalidAbTest(`variants[${i}].html`, "must not be empty");
        if (Buffer.byteLength(value, "utf8") > HTML_MAX_BYTES) throw invalidAbTest(`variants[${i}].html`, `is larger than ${HTML_MAX_BYTES} bytes`);
      } else if (CONTROL.test(value)) {
        throw badRequest("header_injection", `abTest.variants[${i}].${field} must not contain line breaks or control characters`);
      } else if (field !== "previewText" && !value.trim()) {
        throw invalidAbTest(`variants[${i}].${field}`, "must not be empty");
      }
      v[field] = value;
    }
    if (!AB_VARIANT_FIELDS.some((f) => v[f] !== undefined && v[f] !== base[f])) {
      throw invalidAbTest(`variants[${i}]`, "must differ from the broadcast in at least one of subject, fromName, previewText, html");
    }
    return v;
  });
  const share = input.testShare;
  if (typeof share !== "number" || !Number.isFinite(share) || share < AB_MIN_SHARE || share > AB_MAX_SHARE) {
    throw invalidAbTest("testShare", `must be a number from ${AB_MIN_SHARE} to ${AB_MAX_SHARE}`);
  }
  if (!AB_METRICS.includes(input.metric as AbMetric)) throw invalidAbTest("metric", `must be one of ${AB_METRICS.join(", ")}`);
  const wait = input.waitForSeconds;
  if (typeof wait !== "number" || !Number.isInteger(wait) || wait < minWaitSeconds || wait > AB_MAX_WAIT_SECONDS) {
    throw invalidAbTest("waitFor", `must be a whole number of seconds from ${minWaitSeconds} to ${AB_MAX_WAIT_SECONDS} (7 days)`);
  }
  return { variants, testShare: share, metric: input.metric as AbMetric, waitForSeconds: wait };
}

/** A fresh A/B test in a draft. */
export function draftAbTest(config: AbTestConfig): AbTest {
  return { ...config, state: "draft", stats: Object.fromEntries(config.variants.map((_, i) => [abStatsKey(i), emptyAbCounts()])) };
}

/** A number in [0, 1) drawn from (seed, contact id): the same pair always draws the same number. */
export function uniformOf(seed: string, contactId: string): number {
  const digest = createHash("sha256").update(seed).update("\u0000").update(contactId).digest();
  // 48 bits: exact in a double.
  return digest.readUIntBE(0, 6) / 2 ** 48;
}

/** Contacts in the test share among the first `n` recipients of an audience (DESIGN §10.5). */
export const testCountOf = (n: number, testShare: number): number => Math.round(n * testShare);

/**
 * The variant of each recipient of one page (undefined: the rest of the audience), `before`
 * recipients of the audience having come in earlier pages.
 *
 * The audience is streamed page by page and its size is known only at its end, so every page
 * takes exactly its part of the test share, testCountOf(before + page) − testCountOf(before):
 * however many pages there turn out to be, the test holds round(N × testShare) contacts.
 * Which of the page's recipients they are is drawn by ranking them on a hash of (seed, contact
 * id), so the test is a random sample spread over the whole audience, not every k-th contact.
 * The k-th test contact of the audience (pages in order, each in rank order) gets variant
 * k mod `variants`: the variants' sizes differ by at most one.
 *
 * Nothing is drawn from state held in memory: a page written again after a restart (same
 * seed, contacts and `before`) splits the same way.
 */
export function assignVariants(seed: string, contactIds: readonly string[], before: number, testShare: number, variants: number): Array<number | undefined> {
  const first = testCountOf(before, testShare);
  const inPage = testCountOf(before + contactIds.length, testShare) - first;
  const draws = contactIds.map((id) => uniformOf(seed, id));
  // Ties (a repeated id) fall back to the page order, so the ranking is total.
  const ranked = contactIds.map((_, i) => i).sort((a, b) => draws[a] - draws[b] || a - b);
  const out: Array<number | undefined> = new Array(contactIds.length).fill(undefined);
  ranked.slice(0, inPage).forEach((index, rank) => {
    out[index] = (first + rank) % variants;
  });
  return out;
}

export interface AbRates {
  openRate: number;
  clickRate: number;
}

/** Unique opens and clicks per delivered message (0 when nothing was delivered). */
export function ratesOf(c: AbVariantCounts): AbRates {
  return c.delivered > 0 ? { openRate: c.uniqueOpens / c.delivered, clickRate: c.uniqueClicks / c.delivered } : { openRate: 0, clickRate: 0 };
}

/** The variant with the best unique rate for the metric; ties (all zero included): the first. */
export function pickWinner(stats: Record<string, AbVariantCounts>, variants: number, metric: AbMetric): number {
  let best = 0;
  let bestRate = -1;
  for (let i = 0; i < variants; i++) {
    const rates = ratesOf(stats[abStatsKey(i)] ?? emptyAbCounts());
    const rate = metric === "opens" ? rates.openRate : rates.clickRate;
    if (rate > bestRate) {
      best = i;
      bestRate = rate;
    }
  }
  return best;
}

/** A variant's message fields: its own where it has them, else the broadcast's. */
export function variantFields<T extends { subject: string; fromName: string; previewText: string; html: string }>(base: T, variant: AbVariant): T {
  return {
    ...base,
    subject: variant.subject ?? base.subject,
    fromName: variant.fromName ?? base.fromName,
    previewText: variant.previewText ?? base.previewText,
    html: variant.html ?? base.html,
  };
}
