/**
 * A broadcast's A/B test in the draft form (DESIGN §9.8): the fieldset's values (as typed, so a
 * refused form comes back as it was) and the /v1 request's `abTest` made from them. The rules
 * are the broadcast service's and the route schema's: the form passes what was typed and shows
 * the refusal. The markup is views/broadcasts-ab.ts.
 */
import type { Broadcast } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import type { AbTestRequest } from "@mailroom/http/broadcasts-schema.js";
import { refusal } from "@mailroom/http/errors.js";
import { str } from "../form-values.js";

export const AB_SLOTS = 4;
export const AB_FIELDS = ["subject", "fromName", "previewText", "html"] as const;
export type VariantField = (typeof AB_FIELDS)[number];
export const WAIT_UNITS = { minutes: 60, hours: 3600, days: 86_400 } as const;
export type WaitUnit = keyof typeof WAIT_UNITS;

/** The A/B part of the draft form, as typed (strings, so a refused form comes back as it was). */
export interface AbValues {
  enabled: boolean;
  variants: Array<Record<VariantField, string>>;
  /** Percent of the audience, 5–50. */
  testSharePercent: string;
  metric: string;
  waitFor: string;
  waitUnit: WaitUnit;
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
  const unit: WaitUnit = seconds % WAIT_UNITS.days === 0 ? "days" : seconds % WAIT_UNITS.hours === 0 ? "hours" : "minutes";
  return {
    enabled: true,
    variants: Array.from({ length: AB_SLOTS }, (_, i) => {
      const v = ab.variants[i];
      return v ? { subject: v.subject ?? "", fromName: v.fromName ?? "", previewText: v.previewText ?? "", html: v.html ?? "" } : emptyVariant();
    }),
    testSharePercent: String(Math.round(ab.testShare * 10_000) / 100),
    metric: ab.metric,
    waitFor: String(unit === "minutes" ? Math.round((seconds / 60) * 100) / 100 : seconds / WAIT_UNITS[unit]),
    waitUnit: unit,
  };
}

export function abFromForm(body: unknown): AbValues {
  const unit = str(body, "abWaitUnit");
  return {
    enabled: str(body, "ab") === "on",
    variants: Array.from({ length: AB_SLOTS }, (_, i) => {
      const v = emptyVariant();
      for (const f of AB_FIELDS) v[f] = str(body, `ab${f[0].toUpperCase()}${f.slice(1)}${i}`);
      return v;
    }),
    testSharePercent: str(body, "abTestShare").trim(),
    metric: str(body, "abMetric"),
    waitFor: str(body, "abWaitFor").trim(),
    waitUnit: Object.hasOwn(WAIT_UNITS, unit) ? (unit as WaitUnit) : "hours",
  };
}

/**
 * The request's `abTest`, or none when the box is off. A variant slot left empty is no variant;
 * an empty field is the broadcast's own. Numbers the form cannot read go through as -1, so the
 * service's refusal names the field and its range.
 */
export function abRequest(v: AbValues): AbTestRequest | undefined {
  if (!v.enabled) {
    // Variants typed with the test switched off would be dropped without a word: say so instead.
    if (v.variants.some((slot) => AB_FIELDS.some((f) => slot[f].trim() !== ""))) {
      throw refusal({ code: "invalid_payload", status: 400, message: "The A/B test has variants but is switched off: tick “Test variants on part of the audience first”, or clear the variants." });
    }
    return undefined;
  }
  const variants = v.variants
    .filter((slot) => AB_FIELDS.some((f) => slot[f].trim() !== ""))
    .map((slot) => Object.fromEntries(AB_FIELDS.filter((f) => slot[f].trim() !== "").map((f) => [f, slot[f]])));
  const share = v.testSharePercent === "" ? Number.NaN : Number(v.testSharePercent) / 100;
  const wait = v.waitFor === "" ? Number.NaN : Number(v.waitFor) * WAIT_UNITS[v.waitUnit];
  return {
    variants,
    testShare: Number.isFinite(share) ? share : -1,
    metric: v.metric as AbTestRequest["metric"],
    waitFor: Number.isFinite(wait) ? Math.round(wait) : -1,
  };
}
