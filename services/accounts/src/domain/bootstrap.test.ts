import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { memoryDirectory, snapshot } from "../../../audience/src/testing.js";

/** The example document of DESIGN.md §5, plus a second workspace. */
const DESIGN_EXAMPLE = {
  workspaces: [
    {
      id: "ws_acme", name: "Acme", timezone: "Europe/Paris",
      apiKeys: [{ key: "mr_test_acme_1", scopes: ["api_user"] }],
      verifiedEmails: ["founder@gmail.test"], verifiedDomains: ["acme.test"],
      members: ["owner@acme.test"],
      flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
      monthlyLimit: 100000, sendingAccountNew: false,
      contactProperties: [{ slug: "plan", type: "string" }],
      contacts: [{ email: "ann@example.test", firstName: "Ann", timezone: "Asia/Tokyo", subscribed: true, properties: { plan: "pro" } }],
      templates: [{ name: "welcome", subject: "Hi {{firstName}}", html: "<p>…</p>" }],
    },
    { id: "ws_new", name: "Newco", apiKeys: [{ key: "mr_test_new_1" }], sendingAccountNew: true },
  ],
};

describe("bootstrap", () => {
  it("loads the design's document: workspace, key, senders, members, properties, contacts, templates", async () => {
    const dir = await memoryDirectory();
    expect(await dir.bootstrap.loadJson(JSON.stringify(DESIGN_EXAMPLE))).toEqual(["ws_acme", "ws_new"]);
    expect(await dir.workspaces.get("ws_acme")).toMatchObject({
      name: "Acme", timezone: "Europe/Paris", monthlyLimit: 100000, sendingAccountNew: false,
      flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
    });
    expect(await dir.workspaces.get("ws_new")).toMatchObject({ timezone: "UTC", monthlyLimit: 100000, sendingAccountNew: true, flags: { verified: false } });
    // A key without `scopes` in the document gets api_user (which implies api_read).
    expect(await dir.keys.authenticate("mr_test_acme_1")).toMatchObject({ workspaceId: "ws_acme", scopes: ["api_user", "api_read"] });
    expect(await dir.keys.authenticate("mr_test_new_1")).toMatchObject({ workspaceId: "ws_new", scopes: ["api_user", "api_read"] });
    const sender = await dir.senders.check("ws_acme", "Acme <hi@acme.test>");
    expect(sender.allowed).toBe(true);
    expect(sender.dkim?.domain).toBe("acme.test");
    expect((await dir.senders.check("ws_acme", "founder@gmail.test")).allowed).toBe(true);
    expect(await dir.members.list("ws_acme")).toEqual(["owner@acme.test"]);
    // `subscribed: true` of older documents is the status SUBSCRIBED.
    expect(await dir.contacts.get("ws_acme", "ann@example.test")).toMatchObject({
      firstName: "Ann", timezone: "Asia/Tokyo", status: "SUBSCRIBED", source: "DASHBOARD", properties: { plan: "pro" },
    });
    expect((await dir.templates.get("ws_acme", "welcome")).variables).toEqual(["firstName"]);
  });

  it("is idempotent: loading the same document again changes nothing", async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.load(DESIGN_EXAMPLE);
    const first = await snapshot(dir);
    await dir.bootstrap.load(DESIGN_EXAMPLE);
    expect(await snapshot(dir)).toEqual(first);
  });

  it("keeps run-time changes to contacts and templates, and re-applies declared workspace settings", async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.load(DESIGN_EXAMPLE);
    await dir.suppressions.add("ws_acme", "ann@example.test", "unsubscribed");
    await dir.templates.update("ws_acme", { name: "welcome", subject: "Edited", html: "<p>edited</p>" });
    await dir.workspaces.update("ws_acme", { monthlyLimit: 5 });
    await dir.bootstrap.load(DESIGN_EXAMPLE);
    expect((await dir.contacts.get("ws_acme", "ann@example.test")).status).toBe("UNSUBSCRIBED");
    expect((await dir.templates.get("ws_acme", "welcome")).subject).toBe("Edited");
    expect((await dir.workspaces.get("ws_acme")).monthlyLimit).toBe(100000);
  });

  it("loads thousands of contacts by batches, keeps existing ones as they are, and ignores a repeated address", async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.load(DESIGN_EXAMPLE);
    await dir.contacts.update("ws_acme", { email: "ann@example.test", firstName: "Edited" });
    const many = Array.from({ length: 2_500 }, (_, i) => ({ email: `r${i}@audience.test`, firstName: `R${i}` }));
    const doc = structuredClone(DESIGN_EXAMPLE);
    doc.workspaces[0].contacts = [...(doc.workspaces[0].contacts ?? []), ...many, { email: "R7@audience.test", firstName: "Again" }] as typeof doc.workspaces[0]["contacts"];
    await dir.bootstrap.load(doc);
    expect(await dir.contacts.count("ws_acme")).toBe(2_501);
    expect(await dir.contacts.get("ws_acme", "r2499@audience.test")).toMatchObject({ firstName: "R2499", status: "SUBSCRIBED", source: "DASHBOARD" });
    expect((await dir.contacts.get("ws_acme", "r7@audience.test")).firstName).toBe("R7");
    expect((await dir.contacts.get("ws_acme", "ann@example.test")).firstName).toBe("Edited");
  });

  it("validates the whole document first: a bad entry anywhere writes nothing", async () => {
    const dir = await memoryDirectory();
    const bad = (patch: Record<string, unknown>) => ({ workspaces: [DESIGN_EXAMPLE.workspaces[1], { ...DESIGN_EXAMPLE.workspaces[0], ...patch }] });
    const cases: Array<[unknown, RegExp]> = [
      [bad({ contacts: [{ email: "broken" }] }), /contact broken/],
      [bad({ contacts: [{ email: "x@y.test", properties: { unknownProp: 1 } }] }), /unknownProp/],
      [bad({ contactProperties: [{ slug: "plan", type: "text" }] }), /Unknown property type "text"/],
      [bad({ verifiedEmails: ["nope"] }), /nope/],
      [bad({ verifiedDomains: ["not a domain"] }), /not a domain/],
      [bad({ apiKeys: [{ key: "mr_test_new_1" }] }), /already belongs to workspace ws_new/],
      [bad({ apiKeys: [{ key: "k", scopes: ["api_user"] }] }), /API key/],
      [bad({ apiKeys: [{ key: "mr_test_acme_1", scopes: ["god"] }] }), /Unknown scope/],
      [bad({ templates: [{ name: "t", subject: "", html: "x" }] }), /subject is required/],
      [bad({ timezone: "Nowhere/Land" }), /timezone/],
      [{ workspaces: [{ name: "no id" }] }, /id/],
      [{ workspaces: "nope" }, /workspaces/],
    ];
    for (const [doc, message] of cases) {
      const err = await dir.bootstrap.load(doc).catch((e) => e);
      expect(errorInfoOf(err), JSON.stringify(doc).slice(0, 120)).toMatchObject({ code: "invalid_bootstrap", httpStatus: 400 });
      expect(errorInfoOf(err)!.message).toMatch(message);
    }
    expect(errorInfoOf(await dir.bootstrap.loadJson("{not json").catch((e) => e))?.code).toBe("invalid_bootstrap");
    // The parser's message quotes the text around the error: a key there must not reach the error (and the log).
    const leaky = await dir.bootstrap.loadJson('{"workspaces":[{"id":"ws_x","apiKeys":[{"key":mr_live_Sup3rS3cretKeyValue}]}]}').catch((e) => e);
    expect(errorInfoOf(leaky)?.code).toBe("invalid_bootstrap");
    expect(errorInfoOf(leaky)?.message).not.toMatch(/mr_live|Sup3r/);
    expect(await dir.workspaces.list()).toEqual([]);
    expect(Object.values(await snapshot(dir)).every((docs) => docs.length === 0)).toBe(true);
  });

  it("refuses a key that another workspace already owns in the store", async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.load(DESIGN_EXAMPLE);
    const thief = { workspaces: [{ id: "ws_thief", name: "T", apiKeys: [{ key: "mr_test_acme_1" }] }] };
    expect(errorInfoOf(await dir.bootstrap.load(thief).catch((e) => e))?.message).toMatch(/already belongs to workspace ws_acme/);
    expect(await dir.workspaces.find("ws_thief")).toBeNull();
  });
});
