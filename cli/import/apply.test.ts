import { describe, expect, it } from "vitest";
import { applyImport, suppressionKey, type ExistingContact, type ImportTarget } from "./apply.js";
import { contact, type ImportRecord } from "./records.js";

/** The audience unit's rules an import relies on, in memory: upserts that write only what differs, idempotent suppressions and memberships. */
function memoryTarget() {
  let clock = 1;
  const contacts = new Map<string, ExistingContact>();
  const suppressions = new Set<string>();
  const groups = new Map<string, string>();
  const members = new Set<string>();
  const slugs = new Set(["firstName", "lastName", "city"]);
  const calls: string[] = [];
  const target: ImportTarget = {
    propertySlugs: async () => new Set(slugs),
    createProperty: async (slug) => void (calls.push(`property ${slug}`), slugs.add(slug)),
    findContacts: async (emails) => new Map(emails.flatMap((e) => (contacts.has(e) ? [[e, { ...contacts.get(e)! }] as const] : []))),
    upsertContacts: async (items) => items.map((c) => {
      const key = c.email.toLowerCase();
      const before = contacts.get(key);
      const next: ExistingContact = before
        ? { ...before, fields: { ...before.fields }, properties: { ...before.properties } }
        : { id: `ctc_${key}`, emailLower: key, firstName: "", lastName: "", timezone: "", status: "SUBSCRIBED", fields: {}, properties: {}, updatedAt: clock++ };
      if (c.firstName !== undefined) next.firstName = c.firstName;
      if (c.lastName !== undefined) next.lastName = c.lastName;
      if (c.status && !(c.status === "SUBSCRIBED" && before?.status === "UNSUBSCRIBED")) next.status = c.status;
      Object.assign(next.fields, c.fields);
      Object.assign(next.properties, c.properties);
      if (before && JSON.stringify({ ...next, updatedAt: 0 }) !== JSON.stringify({ ...before, updatedAt: 0 })) next.updatedAt = clock++;
      contacts.set(key, next);
      return { ok: true, created: !before, contact: next };
    }),
    findSuppressed: async (items) => new Set(items.map(suppressionKey).filter((k) => suppressions.has(k))),
    addSuppressions: async (items) => items.map((s) => {
      if (!s.email?.includes("@")) return { status: "rejected" as const, reason: "invalid_email" };
      const key = suppressionKey(s);
      const existed = suppressions.has(key);
      suppressions.add(key);
      return { status: existed ? ("existing" as const) : ("created" as const) };
    }),
    groups: async () => new Map(groups),
    createGroup: async (publicId) => (calls.push(`group ${publicId}`), groups.set(publicId, `grp_${publicId}`), `grp_${publicId}`),
    groupMembers: async (groupId, emails) => new Set(emails.filter((e) => members.has(`${groupId} ctc_${e}`))),
    addToGroup: async (groupId, contactId) => {
      const key = `${groupId} ${contactId}`;
      if (members.has(key)) return false;
      members.add(key);
      return true;
    },
  };
  return { target, contacts, suppressions, members, calls };
}

function records(): ImportRecord[] {
  const ann = { ...contact({ file: "a.csv", line: 2 }, "Ann@Example.test"), firstName: "Ann", properties: { plan: "pro" }, groups: ["VIP", "Early adopters"] };
  const bob = { ...contact({ file: "a.csv", line: 3 }, "bob@example.test"), status: "UNSUBSCRIBED" as const, groups: ["VIP"] };
  return [
    ann,
    bob,
    { kind: "suppression", file: "a.csv", line: 3, email: "bob@example.test", reason: "unsubscribed", source: "a.csv" },
    { kind: "suppression", file: "b.json", line: 1, email: "gone@example.test", reason: "hard_bounce", source: "b.json" },
    { kind: "suppression", file: "b.json", line: 2, email: "GONE@example.test", reason: "complaint", source: "b.json" },
    { kind: "skipped", file: "b.json", line: 3, reason: "soft bounce" },
    { kind: "rejected", file: "b.json", line: 4, email: "x", reason: "not an address" },
  ];
}

async function* stream(list: ImportRecord[]) {
  yield* structuredClone(list);
}

describe("applyImport", () => {
  it("imports contacts, properties, groups and suppressions, then a second run changes nothing", async () => {
    const m = memoryTarget();
    const progress: number[] = [];
    const first = await applyImport({ records: stream(records()), target: m.target, onProgress: (n) => progress.push(n) });
    expect(first).toMatchObject({
      rows: 6,
      contacts: { created: 2, updated: 0, unchanged: 0, rejected: 0 },
      suppressions: { created: 2, existing: 1, rejected: 0 },
      groups: { created: ["vip", "early-adopters"], memberships: 3 },
      properties: { created: ["plan"] },
      skipped: { "soft bounce": 1 },
      rejectedCount: 1,
    });
    expect(progress).toEqual([1, 2, 3, 4, 5, 6]);
    expect(m.contacts.get("ann@example.test")).toMatchObject({ firstName: "Ann", properties: { plan: "pro" } });
    expect(m.contacts.get("bob@example.test")?.status).toBe("UNSUBSCRIBED");

    const again = await applyImport({ records: stream(records()), target: m.target });
    expect(again).toMatchObject({
      contacts: { created: 0, updated: 0, unchanged: 2 },
      suppressions: { created: 0, existing: 3 },
      groups: { created: [], memberships: 0 },
      properties: { created: [] },
    });
    expect(m.calls.filter((c) => c.startsWith("group")).length).toBe(2);
  });

  it("a dry run counts what would change and changes nothing", async () => {
    const m = memoryTarget();
    const dry = await applyImport({ records: stream(records()), target: m.target, dryRun: true });
    expect(dry).toMatchObject({
      dryRun: true,
      contacts: { created: 2, updated: 0, unchanged: 0 },
      suppressions: { created: 3, existing: 0 },
      groups: { created: ["vip", "early-adopters"], memberships: 3 },
      properties: { created: ["plan"] },
    });
    expect(m.contacts.size + m.suppressions.size + m.members.size + m.calls.length).toBe(0);

    await applyImport({ records: stream(records()), target: m.target });
    const changed = records();
    (changed[0] as { firstName: string }).firstName = "Annie";
    const after = await applyImport({ records: stream(changed), target: m.target, dryRun: true });
    expect(after).toMatchObject({ contacts: { created: 0, updated: 1, unchanged: 1 }, suppressions: { created: 0, existing: 3 }, groups: { created: [], memberships: 0 } });
    expect(m.contacts.get("ann@example.test")?.firstName).toBe("Ann");
  });

  it("sends a repeated address in a later batch, so the later row wins", async () => {
    const m = memoryTarget();
    const rows: ImportRecord[] = [
      { ...contact({ file: "a.csv", line: 2 }, "ann@example.test"), firstName: "First" },
      { ...contact({ file: "a.csv", line: 3 }, "ANN@example.test"), firstName: "Second" },
    ];
    const summary = await applyImport({ records: stream(rows), target: m.target });
    expect(summary.contacts).toMatchObject({ created: 1, updated: 1 });
    expect(m.contacts.get("ann@example.test")?.firstName).toBe("Second");
  });
});
