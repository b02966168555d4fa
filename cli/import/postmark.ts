import { baseName, cell, csvFile, hasColumns, isJsonFile, readJson } from "./files.js";
import {
  ImportFileError, looksLikeEmail, parseDate, type Importer, type ImportRecord, type RecordOrigin, type SuppressionReasonName,
} from "./records.js";

/**
 * Postmark keeps no contacts, only what stops sending: the suppression dump of a message stream
 * (`GET /message-streams/{stream}/suppressions/dump`: `{ Suppressions: [{ EmailAddress,
 * SuppressionReason, Origin, CreatedAt }] }`) and the bounces (`GET /bounces`: `{ TotalCount,
 * Bounces: [{ Type, Email, BouncedAt, Inactive, … }] }`), as the JSON the API answers or as CSV
 * with the same field names.
 */
export const postmark: Importer = {
  name: "postmark",
  async *read(files) {
    for (const file of files) {
      if (isJsonFile(file)) yield* fromJson(file);
      else yield* fromCsv(file);
    }
  },
};

interface Entry {
  [field: string]: unknown;
}

/** A suppression dump entry: HardBounce, SpamComplaint, ManualSuppression (Origin Recipient: the recipient unsubscribed). */
function suppressionOf(e: Entry, origin: RecordOrigin, source: string): ImportRecord {
  const email = String(e.EmailAddress ?? "").trim();
  if (!looksLikeEmail(email)) return { kind: "rejected", ...origin, email, reason: "EmailAddress is not an email address" };
  const kind = String(e.SuppressionReason ?? "");
  const reason: SuppressionReasonName | undefined =
    kind === "HardBounce" ? "hard_bounce"
      : kind === "SpamComplaint" ? "complaint"
        : kind === "ManualSuppression" ? (String(e.Origin ?? "") === "Recipient" ? "unsubscribed" : "manual")
          : undefined;
  if (!reason) return { kind: "rejected", ...origin, email, reason: `unknown SuppressionReason "${kind.slice(0, 40)}"` };
  return { kind: "suppression", ...origin, email, reason, createdAt: parseDate(e.CreatedAt), source };
}

/**
 * A bounce: only one that deactivated the address (`Inactive`) stops sending in Postmark, so
 * only those are suppressions here; a soft bounce or a reactivated address carries nothing over.
 */
function bounceOf(e: Entry, origin: RecordOrigin, source: string): ImportRecord {
  const email = String(e.Email ?? "").trim();
  if (!looksLikeEmail(email)) return { kind: "rejected", ...origin, email, reason: "Email is not an email address" };
  const type = String(e.Type ?? "");
  const inactive = e.Inactive === true || String(e.Inactive).toLowerCase() === "true";
  if (!inactive) return { kind: "skipped", ...origin, reason: `${type || "bounce"} that left the address active in Postmark` };
  const reason: SuppressionReasonName =
    type === "SpamComplaint" ? "complaint" : type === "Unsubscribe" ? "unsubscribed" : type === "ManuallyDeactivated" ? "manual" : "hard_bounce";
  return { kind: "suppression", ...origin, email, reason, createdAt: parseDate(e.BouncedAt), source };
}

async function* fromJson(file: string): AsyncGenerator<ImportRecord> {
  const data = (await readJson(file)) as { Suppressions?: unknown; Bounces?: unknown } | null;
  const source = baseName(file);
  const list = (value: unknown, what: string) => {
    if (!Array.isArray(value)) throw new ImportFileError(`${source}: ${what} is not a list`);
    return value as unknown[];
  };
  if (data && typeof data === "object" && "Suppressions" in data) {
    for (const [i, e] of list(data.Suppressions, "Suppressions").entries()) yield suppressionOf(entry(e), { file: source, line: i + 1 }, source);
  } else if (data && typeof data === "object" && "Bounces" in data) {
    for (const [i, e] of list(data.Bounces, "Bounces").entries()) yield bounceOf(entry(e), { file: source, line: i + 1 }, source);
  } else {
    throw new ImportFileError(`${source} is not a Postmark export: expected the suppression dump ({"Suppressions": […]}) or the bounces ({"Bounces": […]})`);
  }
}

const entry = (e: unknown): Entry => (e && typeof e === "object" ? (e as Entry) : {});

async function* fromCsv(file: string): AsyncGenerator<ImportRecord> {
  const source = baseName(file);
  let shape: "suppressions" | "bounces" | undefined;
  for await (const { header, line, row } of csvFile(file)) {
    shape ??= hasColumns(header, "EmailAddress", "SuppressionReason") ? "suppressions" : hasColumns(header, "Email", "Type", "Inactive") ? "bounces" : undefined;
    const origin = { file: source, line };
    if (shape === "suppressions") {
      yield suppressionOf({ EmailAddress: cell(row, "EmailAddress"), SuppressionReason: cell(row, "SuppressionReason"), Origin: cell(row, "Origin"), CreatedAt: cell(row, "CreatedAt") }, origin, source);
    } else if (shape === "bounces") {
      yield bounceOf({ Email: cell(row, "Email"), Type: cell(row, "Type"), Inactive: cell(row, "Inactive"), BouncedAt: cell(row, "BouncedAt") }, origin, source);
    } else {
      throw new ImportFileError(`${source} is not a Postmark export: expected the columns EmailAddress, SuppressionReason (suppressions) or Email, Type, Inactive (bounces); found ${header.join(", ")}`);
    }
  }
}
