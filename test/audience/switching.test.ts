/**
 * Switching from another provider (issue 48, DESIGN §10.3): `mailroom import postmark|sendgrid|
 * mailchimp|resend <files>` against the real accounts and audience processes. Each importer turns its fixture
 * (test/fixtures/switching, written from the provider's documented export columns) into the
 * expected contacts, groups and suppressions; a second run changes nothing; `--dry-run` changes
 * nothing; a malformed file is a clear error with exit code 1 and writes nothing. Each provider
 * imports into a workspace of its own, and nothing reaches the bystander workspace.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createWriteStream } from "node:fs";
import { once } from "node:events";
import os from "node:os";
import path from "node:path";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import yazl from "yazl";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContactService, ContactStatus, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { GroupService } from "@mailroom/proto/audience/v1/groups_pb.js";
import { connectClient } from "@mailroom/kit";
import { runCli } from "../../cli/program.js";
import type { ImportSummary } from "../../cli/import/apply.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

const FIXTURES = path.resolve(import.meta.dirname, "../fixtures/switching");
const fixture = (...parts: string[]) => path.join(FIXTURES, ...parts);
const WS = { postmark: "ws_switch_postmark", sendgrid: "ws_switch_sendgrid", mailchimp: "ws_switch_mailchimp", resend: "ws_switch_resend", bad: "ws_switch_bad", bystander: "ws_switch_bystander" };

describe("mailroom import <provider> (switching to Mailroom)", () => {
  let sys: TestSystem;
  let tmp: string;
  let audience: ReturnType<typeof connectClient<typeof ContactService>>;
  let groups: ReturnType<typeof connectClient<typeof GroupService>>;

  async function cli(...args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(args, {
      env: { MAILROOM_ACCOUNTS_URL: `http://127.0.0.1:${sys.ports.accounts}`, MAILROOM_AUDIENCE_URL: `http://127.0.0.1:${sys.ports.audience}` },
      interactive: false,
      output: (json) => ({ out: (l) => out.push(l), err: (l) => err.push(l), json }),
    });
    return { code, out: out.join("\n"), err: err.join("\n") };
  }
  /** `import … --json`: the exit code and the summary. */
  async function importJson(ws: string, ...args: string[]): Promise<{ code: number; summary: ImportSummary; err: string }> {
    const res = await cli("import", ...args, "-w", ws, "--json");
    expect(res.err, res.err).toBe("");
    return { code: res.code, summary: JSON.parse(res.out) as ImportSummary, err: res.err };
  }

  async function contactsOf(ws: string) {
    const res = await audience.listContacts({ workspaceId: ws, page: { limit: 500, cursor: "" } });
    return new Map(res.contacts.map((c) => [c.email, c]));
  }
  async function suppressionsOf(ws: string) {
    const res = await audience.listSuppressions({ workspaceId: ws, page: { limit: 500, cursor: "" } });
    return Object.fromEntries(res.suppressions.map((s) => [s.email || `@${s.domain}`, (SuppressionReason[s.reason] ?? "").toLowerCase()]));
  }
  /** Group publicId → its members' addresses, sorted. */
  async function groupsOf(ws: string) {
    const byId = new Map([...(await contactsOf(ws)).values()].map((c) => [c.id, c.email]));
    const out: Record<string, string[]> = {};
    for (const g of (await groups.listGroups({ workspaceId: ws, page: { limit: 100, cursor: "" } })).groups) {
      const members = await groups.listGroupContacts({ workspaceId: ws, groupId: g.id, page: { limit: 100, cursor: "" } });
      out[g.publicId] = members.members.map((m) => byId.get(m.contactId)!).sort();
    }
    return out;
  }
  /** Everything a workspace holds that an import writes, to compare before and after. */
  const snapshot = async (ws: string) => JSON.stringify({
    contacts: [...(await contactsOf(ws)).values()].map((c) => [c.email, c.firstName, c.status, c.properties, `${c.updatedAt?.seconds}.${c.updatedAt?.nanos}`]),
    suppressions: await suppressionsOf(ws),
    groups: await groupsOf(ws),
    properties: (await audience.listContactProperties({ workspaceId: ws })).properties.map((p) => p.slug),
  });

  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), "mailroom-switch-"));
    sys = await useSystem({
      smtp: false,
      units: ["accounts", "audience"],
      bootstrap: { workspaces: Object.values(WS).map((id) => ({ id, name: id, timezone: "UTC", apiKeys: [{ key: `mr_test_${id}_1`, scopes: ["api_user"] }] })) },
    });
    const url = `http://127.0.0.1:${sys.ports.audience}`;
    audience = connectClient(ContactService, url);
    groups = connectClient(GroupService, url);
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await rm(tmp, { recursive: true, force: true });
  });

  it("postmark: the suppression dump and the bounces become suppressions; a second run changes nothing", async () => {
    const files = [fixture("postmark-suppressions.json"), fixture("postmark-bounces.json")];
    const first = await importJson(WS.postmark, "postmark", ...files);
    expect(first.code).toBe(2); // one rejected row
    expect(first.summary).toMatchObject({
      rows: 8, suppressions: { created: 5, existing: 1, rejected: 0 }, contacts: { created: 0 }, rejectedCount: 1,
      skipped: { "SoftBounce that left the address active in Postmark": 1 },
    });
    expect(first.summary.rejected).toEqual([{ file: "postmark-suppressions.json", line: 5, email: "not-an-address", reason: "EmailAddress is not an email address" }]);
    expect(await suppressionsOf(WS.postmark)).toEqual({
      "ann.bounce@postmark.test": "hard_bounce", "bob.spam@postmark.test": "complaint", "cat.unsub@postmark.test": "unsubscribed",
      "dan.manual@postmark.test": "manual", "eve.gone@postmark.test": "hard_bounce",
    });
    const listed = (await audience.listSuppressions({ workspaceId: WS.postmark, page: { limit: 10, cursor: "" } })).suppressions;
    const ann = listed.find((s) => s.email === "ann.bounce@postmark.test")!;
    expect(ann.source).toBe("postmark-suppressions.json");
    expect(timestampDate(ann.createdAt!).toISOString()).toBe("2025-03-02T13:58:33.000Z");

    const before = await snapshot(WS.postmark);
    const again = await importJson(WS.postmark, "postmark", ...files);
    expect(again.summary.suppressions).toEqual({ created: 0, existing: 6, rejected: 0 });
    expect(await snapshot(WS.postmark)).toBe(before);
  });

  it("sendgrid: a dry run changes nothing; the import brings contacts and suppressions; a second run changes nothing", async () => {
    const files = ["sendgrid-bounces.csv", "sendgrid-spam_reports.csv", "sendgrid-global_unsubscribes.csv", "sendgrid-contacts.csv"].map((f) => fixture(f));
    const empty = await snapshot(WS.sendgrid);
    const dry = await cli("import", "sendgrid", ...files, "-w", WS.sendgrid, "--dry-run");
    expect(dry.code, dry.err).toBe(0);
    expect(dry.out).toContain("dry run: nothing was changed");
    expect(dry.out).toMatch(/contacts: +3 to create, 0 to update, 0 unchanged/);
    expect(dry.out).toMatch(/suppressed: +3 to add, 0 already suppressed/);
    expect(dry.out).toMatch(/properties: +\d+ to create \(.*plan.*\)/);
    expect(await snapshot(WS.sendgrid)).toBe(empty);

    const first = await importJson(WS.sendgrid, "sendgrid", ...files);
    expect(first.code).toBe(0);
    expect(first.summary).toMatchObject({ rows: 7, contacts: { created: 3, updated: 0, rejected: 0 }, suppressions: { created: 3, existing: 0 }, rejectedCount: 0 });
    expect(first.summary.skipped).toEqual({ "soft bounce (4.2.2)": 1 });
    const contacts = await contactsOf(WS.sendgrid);
    expect([...contacts.keys()].sort()).toEqual(["ivy@sendgrid.test", "jon@sendgrid.test", "kim.unsub@sendgrid.test"]);
    const ivy = contacts.get("ivy@sendgrid.test")!;
    expect([ivy.firstName, ivy.lastName, ivy.city, ivy.countryCode, ivy.phone, ivy.properties?.plan]).toEqual(["Ivy", "Stone", "Lisbon", "PT", "+351 21 000 0000", "pro"]);
    expect(timestampDate(ivy.createdAt!).toISOString()).toBe("2024-03-04T10:00:00.000Z");
    expect(contacts.get("jon@sendgrid.test")!.properties).toMatchObject({ country: "United States", postal_code: "73301", plan: "free" });
    // The global unsubscribe unsubscribes the contact the contacts export brought.
    expect(contacts.get("kim.unsub@sendgrid.test")!.status).toBe(ContactStatus.UNSUBSCRIBED);
    expect(contacts.get("ivy@sendgrid.test")!.status).toBe(ContactStatus.SUBSCRIBED);
    expect(await suppressionsOf(WS.sendgrid)).toEqual({ "gus.bounce@sendgrid.test": "hard_bounce", "ida.spam@sendgrid.test": "complaint", "kim.unsub@sendgrid.test": "unsubscribed" });

    const before = await snapshot(WS.sendgrid);
    const again = await importJson(WS.sendgrid, "sendgrid", ...files);
    expect(again.summary).toMatchObject({ contacts: { created: 0, updated: 0, unchanged: 3 }, suppressions: { created: 0, existing: 3 }, properties: { created: [] } });
    expect(await snapshot(WS.sendgrid)).toBe(before);
  });

  it("mailchimp: the audience export zip becomes contacts with their status, tags as groups, and suppressions", async () => {
    const zipPath = path.join(tmp, "mailchimp-audience.zip");
    const zip = new yazl.ZipFile();
    for (const kind of ["subscribed", "unsubscribed", "cleaned"]) {
      const name = `${kind}_members_export_3fa2b1c0d9.csv`;
      zip.addFile(fixture("mailchimp", name), name);
    }
    zip.end();
    const out = createWriteStream(zipPath);
    zip.outputStream.pipe(out);
    await once(out, "close");

    const first = await importJson(WS.mailchimp, "mailchimp", zipPath);
    expect(first.code).toBe(0);
    expect(first.summary).toMatchObject({
      rows: 4, contacts: { created: 4, rejected: 0 }, suppressions: { created: 2, existing: 0 },
      groups: { created: ["vip", "early-adopters"], memberships: 4 }, properties: { created: ["address", "company"] },
    });
    const contacts = await contactsOf(WS.mailchimp);
    const status = (email: string) => ContactStatus[contacts.get(email)!.status];
    expect(["lea", "max", "ned", "oli"].map((n) => status(`${n}@mailchimp.test`))).toEqual(["SUBSCRIBED", "SUBSCRIBED", "UNSUBSCRIBED", "ARCHIVED"]);
    const lea = contacts.get("lea@mailchimp.test")!;
    expect([lea.firstName, lea.lastName, lea.timezone, lea.countryCode, lea.phone, lea.properties?.company]).toEqual(["Lea", "Moreau", "Europe/Paris", "FR", "+33 1 23 45 67 89", "Acme"]);
    expect(contacts.get("max@mailchimp.test")!.lastName).toBe("Müller");
    expect(await groupsOf(WS.mailchimp)).toEqual({ vip: ["lea@mailchimp.test", "ned@mailchimp.test"], "early-adopters": ["lea@mailchimp.test", "max@mailchimp.test"] });
    expect(await suppressionsOf(WS.mailchimp)).toEqual({ "ned@mailchimp.test": "unsubscribed", "oli@mailchimp.test": "hard_bounce" });

    const before = await snapshot(WS.mailchimp);
    const again = await importJson(WS.mailchimp, "mailchimp", zipPath);
    expect(again.summary).toMatchObject({ contacts: { created: 0, updated: 0, unchanged: 4 }, suppressions: { created: 0, existing: 2 }, groups: { created: [], memberships: 0 } });
    expect(await snapshot(WS.mailchimp)).toBe(before);
  });

  it("resend: contacts with properties and unsubscribes, bounced and complained emails; --group; a rejected row exits 2", async () => {
    const files = [fixture("resend-contacts.csv"), fixture("resend-emails.json")];
    const first = await cli("import", "resend", ...files, "-w", WS.resend, "--group", "Newsletter");
    expect(first.code, first.err).toBe(2);
    expect(first.out).toMatch(/contacts: +2 created, 0 updated, 0 unchanged, 0 rejected/);
    expect(first.out).toMatch(/suppressed: +3 added, 0 already suppressed, 0 rejected/);
    expect(first.out).toContain("resend-contacts.csv line 4 (broken-address): email is not an email address");
    const contacts = await contactsOf(WS.resend);
    expect([...contacts.keys()].sort()).toEqual(["pia@resend.test", "quin@resend.test"]);
    expect(contacts.get("pia@resend.test")!.properties).toEqual({ company: "Initech" });
    expect(contacts.get("quin@resend.test")!.status).toBe(ContactStatus.UNSUBSCRIBED);
    expect(await groupsOf(WS.resend)).toEqual({ newsletter: ["pia@resend.test", "quin@resend.test"] });
    expect(await suppressionsOf(WS.resend)).toEqual({ "quin@resend.test": "unsubscribed", "rae.bounce@resend.test": "hard_bounce", "sam.spam@resend.test": "complaint" });

    const before = await snapshot(WS.resend);
    const again = await importJson(WS.resend, "resend", ...files, "--group", "Newsletter");
    expect(again.summary).toMatchObject({ contacts: { created: 0, updated: 0, unchanged: 2 }, suppressions: { created: 0, existing: 3 }, groups: { created: [], memberships: 0 } });
    expect(await snapshot(WS.resend)).toBe(before);
    // Nothing reached the workspace nobody imported into.
    expect(await snapshot(WS.bystander)).toBe(await snapshot(WS.bad));
  });

  it("a malformed or foreign file is a clear error, exit code 1, and nothing is written", async () => {
    const broken = path.join(tmp, "bounces.csv");
    await writeFile(broken, 'email,created,reason,status\nok@bad.test,1731571200,"550 5.1.1 no such user",5.1.1\nnext@bad.test,1731571200,"never closed,5.1.1\n');
    const before = await snapshot(WS.bad);
    const res = await cli("import", "sendgrid", fixture("sendgrid-spam_reports.csv"), broken, "-w", WS.bad);
    expect(res.code).toBe(1);
    expect(res.err).toMatch(/^error: nothing imported: bounces\.csv is not well-formed CSV: .*/);
    const foreign = await cli("import", "mailchimp", fixture("sendgrid-contacts.csv"), "-w", WS.bad);
    expect(foreign.code).toBe(1);
    expect(foreign.err).toContain('sendgrid-contacts.csv is not a Mailchimp audience export: it has no "Email Address" column');
    const missing = await cli("import", "postmark", path.join(tmp, "nope.json"), "-w", WS.bad);
    expect([missing.code, missing.err]).toEqual([1, `error: nothing imported: ${path.join(tmp, "nope.json")}: no such file`]);
    const unknown = await cli("import", "mailgun", broken, "-w", WS.bad);
    expect([unknown.code, unknown.err]).toEqual([1, 'error: unknown provider "mailgun"; use postmark, sendgrid, mailchimp, resend']);
    expect(await snapshot(WS.bad)).toBe(before);
  });
});
