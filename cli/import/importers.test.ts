import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mailchimp, parseTags } from "./mailchimp.js";
import { postmark } from "./postmark.js";
import { ImportFileError, parseDate, type Importer, type ImportRecord } from "./records.js";
import { resend } from "./resend.js";
import { sendgrid } from "./sendgrid.js";

const FIXTURES = path.resolve(import.meta.dirname, "../../test/fixtures/switching");
const fixture = (name: string) => path.join(FIXTURES, name);

async function read(importer: Importer, ...files: string[]): Promise<ImportRecord[]> {
  const out: ImportRecord[] = [];
  for await (const r of importer.read(files)) out.push(r);
  return out;
}
const of = <K extends ImportRecord["kind"]>(records: ImportRecord[], kind: K) => records.filter((r): r is Extract<ImportRecord, { kind: K }> => r.kind === kind);
const suppressed = (records: ImportRecord[]) => of(records, "suppression").map((s) => [s.email, s.reason]);

describe("provider export readers", () => {
  let tmp: string;
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), "mailroom-import-"));
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });
  const file = async (name: string, text: string) => {
    const p = path.join(tmp, name);
    await writeFile(p, text);
    return p;
  };

  it("postmark: the suppression dump and the bounces, by reason and origin; active bounces carry nothing", async () => {
    const records = await read(postmark, fixture("postmark-suppressions.json"), fixture("postmark-bounces.json"));
    expect(suppressed(records)).toEqual([
      ["ann.bounce@postmark.test", "hard_bounce"],
      ["bob.spam@postmark.test", "complaint"],
      ["cat.unsub@postmark.test", "unsubscribed"],
      ["dan.manual@postmark.test", "manual"],
      ["eve.gone@postmark.test", "hard_bounce"],
      ["bob.spam@postmark.test", "complaint"],
    ]);
    expect(of(records, "suppression")[0]).toMatchObject({ createdAt: new Date("2025-03-02T13:58:33Z"), source: "postmark-suppressions.json", file: "postmark-suppressions.json", line: 1 });
    expect(of(records, "rejected")).toEqual([{ kind: "rejected", file: "postmark-suppressions.json", line: 5, email: "not-an-address", reason: "EmailAddress is not an email address" }]);
    expect(of(records, "skipped")).toEqual([{ kind: "skipped", file: "postmark-bounces.json", line: 2, reason: "SoftBounce that left the address active in Postmark" }]);
  });

  it("postmark: the dump as CSV with the same field names", async () => {
    const csv = await file("suppressions.csv", "EmailAddress,SuppressionReason,Origin,CreatedAt\r\nx@pm.test,SpamComplaint,Recipient,2025-01-01T00:00:00Z\r\n");
    expect(suppressed(await read(postmark, csv))).toEqual([["x@pm.test", "complaint"]]);
  });

  it("sendgrid: bounces (5xx only), spam reports, global unsubscribes and the contacts export", async () => {
    const records = await read(sendgrid, fixture("sendgrid-bounces.csv"), fixture("sendgrid-spam_reports.csv"), fixture("sendgrid-global_unsubscribes.csv"), fixture("sendgrid-contacts.csv"));
    expect(suppressed(records)).toEqual([
      ["gus.bounce@sendgrid.test", "hard_bounce"],
      ["ida.spam@sendgrid.test", "complaint"],
      ["kim.unsub@sendgrid.test", "unsubscribed"],
    ]);
    expect(of(records, "suppression")[0].createdAt).toEqual(new Date(1731571200 * 1000));
    expect(of(records, "skipped").map((s) => s.reason)).toEqual(["soft bounce (4.2.2)"]);
    const contacts = of(records, "contact");
    expect(contacts.map((c) => c.email)).toEqual(["ivy@sendgrid.test", "jon@sendgrid.test", "kim.unsub@sendgrid.test"]);
    expect(contacts[0]).toMatchObject({
      firstName: "Ivy", lastName: "Stone", fields: { city: "Lisbon", countryCode: "PT", phone: "+351 21 000 0000" }, properties: { plan: "pro" },
      createdAt: new Date("2024-03-04T10:00:00Z"), line: 2, groups: [],
    });
    expect(contacts[0].status).toBeUndefined();
    expect(contacts[1].properties).toEqual({ state_province_region: "TX", postal_code: "73301", country: "United States", plan: "free" });
  });

  it("sendgrid: a JSON suppression list from the API, told apart by its name", async () => {
    const json = await file("spam_reports.json", JSON.stringify([{ created: 1443651141, email: "user1@example.com", ip: "10.63.202.100" }]));
    expect(suppressed(await read(sendgrid, json))).toEqual([["user1@example.com", "complaint"]]);
  });

  it("mailchimp: subscribed, unsubscribed and cleaned members with their merge fields and tags", async () => {
    const dir = fixture("mailchimp");
    const records = await read(mailchimp, ...["subscribed", "unsubscribed", "cleaned"].map((k) => path.join(dir, `${k}_members_export_3fa2b1c0d9.csv`)));
    const contacts = of(records, "contact");
    expect(contacts.map((c) => [c.email, c.status, c.groups])).toEqual([
      ["lea@mailchimp.test", "SUBSCRIBED", ["VIP", "Early adopters"]],
      ["max@mailchimp.test", "SUBSCRIBED", ["Early adopters"]],
      ["ned@mailchimp.test", "UNSUBSCRIBED", ["VIP"]],
      ["oli@mailchimp.test", "ARCHIVED", []],
    ]);
    expect(contacts[0]).toMatchObject({
      firstName: "Lea", lastName: "Moreau", timezone: "Europe/Paris", fields: { phone: "+33 1 23 45 67 89", countryCode: "FR" },
      properties: { address: "12 Rue de Rivoli  Paris  75001 FR", company: "Acme" }, createdAt: new Date("2024-01-15T09:12:00Z"),
    });
    expect(suppressed(records)).toEqual([["ned@mailchimp.test", "unsubscribed"], ["oli@mailchimp.test", "hard_bounce"]]);
    expect(of(records, "suppression")[0].createdAt).toEqual(new Date("2024-04-02T18:30:00Z"));
  });

  it("mailchimp: the TAGS cell", () => {
    expect(parseTags('"VIP","Early adopters"')).toEqual(["VIP", "Early adopters"]);
    expect(parseTags('"Say ""hi"""')).toEqual(['Say "hi"']);
    expect(parseTags("a, b")).toEqual(["a", "b"]);
    expect(parseTags("")).toEqual([]);
  });

  it("resend: contacts with their properties and unsubscribes, and bounced or complained emails", async () => {
    const records = await read(resend, fixture("resend-contacts.csv"), fixture("resend-emails.json"));
    expect(of(records, "contact").map((c) => [c.email, c.firstName, c.status, c.properties])).toEqual([
      ["pia@resend.test", "Pia", "SUBSCRIBED", { company: "Initech" }],
      ["quin@resend.test", "Quin", "UNSUBSCRIBED", {}],
    ]);
    expect(of(records, "contact")[0].createdAt).toEqual(new Date("2024-11-05T10:00:00Z"));
    expect(of(records, "rejected").map((r) => [r.line, r.email])).toEqual([[4, "broken-address"]]);
    expect(suppressed(records)).toEqual([["quin@resend.test", "unsubscribed"], ["rae.bounce@resend.test", "hard_bounce"], ["sam.spam@resend.test", "complaint"]]);
    expect(of(records, "skipped").map((s) => s.reason)).toEqual(["an email whose last event is delivered suppresses nothing"]);
  });

  it("refuses a file that is not the provider's export, or not well-formed, naming it", async () => {
    const other = await file("people.csv", "name,phone\nAnn,123\n");
    await expect(read(sendgrid, other)).rejects.toThrow(/people\.csv is not a SendGrid export: .*found name, phone/);
    await expect(read(mailchimp, other)).rejects.toThrow(/people\.csv is not a Mailchimp audience export/);
    await expect(read(resend, other)).rejects.toThrow(ImportFileError);
    const broken = await file("bounces.csv", 'email,created,reason,status\na@x.test,1,"never closed,5.1.1\n');
    await expect(read(sendgrid, broken)).rejects.toThrow(/bounces\.csv is not well-formed CSV/);
    const ragged = await file("unsubscribes.csv", "email,created\na@x.test,1,extra\n");
    await expect(read(sendgrid, ragged)).rejects.toThrow(/unsubscribes\.csv is not well-formed CSV/);
    const json = await file("dump.json", "{ nope");
    await expect(read(postmark, json)).rejects.toThrow(/dump\.json is not valid JSON/);
    const wrong = await file("other.json", '{"Messages": []}');
    await expect(read(postmark, wrong)).rejects.toThrow(/other\.json is not a Postmark export/);
    const empty = await file("empty.csv", "");
    await expect(read(resend, empty)).rejects.toThrow(/empty\.csv is empty/);
  });

  it("reads the date shapes exports write", () => {
    expect(parseDate("1731571200")).toEqual(new Date("2024-11-14T08:00:00Z"));
    expect(parseDate("2024-01-15 09:12:00")).toEqual(new Date("2024-01-15T09:12:00Z"));
    expect(parseDate("2024-11-05 10:00:00.000+00")).toEqual(new Date("2024-11-05T10:00:00Z"));
    expect(parseDate("2025-03-02T08:58:33-05:00")).toEqual(new Date("2025-03-02T13:58:33Z"));
    expect(parseDate("")).toBeUndefined();
    expect(parseDate("soon")).toBeUndefined();
  });
});
