import { createReadStream } from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { baseName, cell, norm, readCsv } from "./files.js";
import { contact, ImportFileError, looksLikeEmail, parseDate, propertySlug, type ImportStatus, type Importer, type ImportRecord } from "./records.js";
import { zipEntries } from "./zip.js";

/**
 * Mailchimp's audience export (Audience → All contacts → Export Audience): a zip of
 * `subscribed_members_export_<id>.csv`, `unsubscribed_members_export_<id>.csv`,
 * `cleaned_members_export_<id>.csv` (and `nonsubscribed_…` for transactional contacts), each
 * with the columns "Email Address", the audience's merge fields by label ("First Name", "Last
 * Name", "Address", "Phone Number", "Birthday", …), one column per group category, then
 * MEMBER_RATING, OPTIN_TIME, OPTIN_IP, CONFIRM_TIME, CONFIRM_IP, LATITUDE, LONGITUDE, GMTOFF,
 * DSTOFF, TIMEZONE, CC, REGION, LAST_CHANGED, LEID, EUID, NOTES, TAGS (the unsubscribed file adds
 * UNSUB_TIME, UNSUB_CAMPAIGN_TITLE, UNSUB_CAMPAIGN_ID, UNSUB_REASON, UNSUB_REASON_OTHER; the
 * cleaned one CLEAN_TIME, CLEAN_CAMPAIGN_TITLE, CLEAN_CAMPAIGN_ID). The zip, or its CSV files.
 */
export const mailchimp: Importer = {
  name: "mailchimp",
  async *read(files) {
    for (const file of files) {
      if (/\.zip$/i.test(file)) {
        let csvs = 0;
        for await (const entry of zipEntries(file)) {
          if (!/\.csv$/i.test(entry.name) || path.basename(entry.name).startsWith(".")) continue;
          csvs++;
          yield* readMembers(await entry.open(), `${baseName(file)}:${path.basename(entry.name)}`);
        }
        if (!csvs) throw new ImportFileError(`${baseName(file)} holds no CSV file: is it Mailchimp's audience export?`);
      } else {
        yield* readMembers(createReadStream(file), baseName(file));
      }
    }
  },
};

type MemberFile = "subscribed" | "unsubscribed" | "cleaned" | "nonsubscribed";

function memberFile(name: string, header: string[]): MemberFile {
  const base = path.basename(name.split(":").pop()!).toLowerCase();
  if (base.startsWith("unsubscribed")) return "unsubscribed";
  if (base.startsWith("cleaned")) return "cleaned";
  if (base.startsWith("nonsubscribed") || base.startsWith("transactional")) return "nonsubscribed";
  if (base.startsWith("subscribed")) return "subscribed";
  const cols = new Set(header.map(norm));
  return cols.has("unsubtime") ? "unsubscribed" : cols.has("cleantime") ? "cleaned" : "subscribed";
}

const STATUS: Record<MemberFile, ImportStatus> = {
  subscribed: "SUBSCRIBED", unsubscribed: "UNSUBSCRIBED", cleaned: "ARCHIVED", nonsubscribed: "OPT_IN_PENDING",
};

/** Mailchimp's own bookkeeping columns: nothing a contact in Mailroom holds. */
const DROPPED = new Set([
  "memberrating", "optinip", "confirmtime", "confirmip", "latitude", "longitude", "gmtoff", "dstoff", "region", "lastchanged",
  "leid", "euid", "notes", "unsubtime", "unsubcampaigntitle", "unsubcampaignid", "unsubreason", "unsubreasonother", "cleantime",
  "cleancampaigntitle", "cleancampaignid", "birthday",
].map(norm));

/** The TAGS cell: `"VIP","Early adopters"` (each tag quoted, doubled quotes inside), or plain comma-separated. */
export function parseTags(raw: string): string[] {
  const text = raw.trim();
  if (!text) return [];
  const quoted = [...text.matchAll(/"((?:[^"]|"")*)"/g)].map((m) => m[1].replace(/""/g, '"').trim());
  return (quoted.length ? quoted : text.split(",")).map((t) => t.trim()).filter(Boolean);
}

async function* readMembers(input: Readable, file: string): AsyncGenerator<ImportRecord> {
  let kind: MemberFile | undefined;
  for await (const { header, line, row } of readCsv(input, file)) {
    if (!kind) {
      if (!header.some((h) => norm(h) === "emailaddress")) {
        throw new ImportFileError(`${file} is not a Mailchimp audience export: it has no "Email Address" column (found ${header.join(", ")})`);
      }
      kind = memberFile(file, header);
    }
    const email = cell(row, "Email Address");
    if (!looksLikeEmail(email)) {
      yield { kind: "rejected", file, line, email, reason: "Email Address is not an email address" };
      continue;
    }
    const c = contact({ file, line }, email);
    c.status = STATUS[kind];
    for (const [headerName, raw] of Object.entries(row)) {
      const value = raw.trim();
      const key = norm(headerName);
      if (!value || key === "emailaddress" || DROPPED.has(key)) continue;
      if (key === "firstname") c.firstName = value;
      else if (key === "lastname") c.lastName = value;
      else if (key === "phonenumber") c.fields.phone = value;
      else if (key === "timezone") { if (value.includes("/")) c.timezone = value; }
      else if (key === "cc") { if (/^[A-Za-z]{2}$/.test(value)) c.fields.countryCode = value.toUpperCase(); }
      else if (key === "optintime") c.createdAt = parseDate(value);
      else if (key === "tags") c.groups.push(...parseTags(value));
      else c.properties[propertySlug(headerName)] = value;
    }
    yield c;
    // An unsubscribe and a cleaned (bounced) address stop mail in Mailroom too, whatever the contact's status.
    if (kind === "unsubscribed") yield { kind: "suppression", file, line, email, reason: "unsubscribed", createdAt: parseDate(cell(row, "UNSUB_TIME")), source: file };
    if (kind === "cleaned") yield { kind: "suppression", file, line, email, reason: "hard_bounce", createdAt: parseDate(cell(row, "CLEAN_TIME")), source: file };
  }
}
