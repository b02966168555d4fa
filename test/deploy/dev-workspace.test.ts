/**
 * The development workspace `npm start` bootstraps: it loads through the accounts unit's
 * bootstrap (its contacts and properties go on to the audience unit) with the same rules as the
 * API, idempotently, and holds what the README's examples need. The README's examples
 * themselves run in test/e2e/readme-examples.test.ts.
 */
import { describe, expect, it } from "vitest";
import { memoryDirectory, snapshot } from "../../services/audience/src/testing.js";
import { DEV_OWNER_EMAIL, DEV_SYSTEM_FROM, DEV_WORKSPACE_ID, devBootstrap, devSystemSender, upgradedDevBootstrap } from "../../deploy/dev-workspace.js";

const KEY = "mr_dev_test_key_0123456789";

describe("the development workspace", () => {
  it("loads: senders of the README's examples, templates with variables, a member, a few dozen contacts with properties and timezones", async () => {
    const dir = await memoryDirectory();
    expect(await dir.bootstrap.load(devBootstrap(KEY))).toEqual([DEV_WORKSPACE_ID]);
    expect(await dir.keys.authenticate(KEY)).toMatchObject({ workspaceId: DEV_WORKSPACE_ID });
    for (const from of ["hello@example.com", "news@acme.com", "hello@acme.com"]) expect((await dir.senders.check(DEV_WORKSPACE_ID, from)).allowed, from).toBe(true);
    expect((await dir.templates.get(DEV_WORKSPACE_ID, "welcome")).variables).toEqual(["firstName"]);
    expect((await dir.templates.get(DEV_WORKSPACE_ID, "receipt")).variables.sort()).toEqual(["amount", "firstName", "orderId"]);
    expect(await dir.members.list(DEV_WORKSPACE_ID)).toEqual([DEV_OWNER_EMAIL]);
    // The console's system sender under `npm start`: an address the workspace may send from, its owner a member.
    const sender = devSystemSender({});
    expect(sender).toEqual({ MAILROOM_SYSTEM_FROM: DEV_SYSTEM_FROM, MAILROOM_SYSTEM_WORKSPACE: DEV_WORKSPACE_ID });
    expect((await dir.senders.check(DEV_WORKSPACE_ID, "signin@example.com")).allowed).toBe(true);
    expect(devBootstrap(KEY).workspaces[0]!.members).toEqual([{ email: DEV_OWNER_EMAIL, role: "OWNER" }]);
    // The user's own choice stands (one of the two alone is the gateway's config error to report).
    expect(devSystemSender({ MAILROOM_SYSTEM_FROM: "me@acme.com" })).toEqual({});
    expect(devSystemSender({ MAILROOM_SYSTEM_WORKSPACE: "ws_mine" })).toEqual({});

    const all = await dir.contacts.count(DEV_WORKSPACE_ID);
    const subscribed = await dir.contacts.count(DEV_WORKSPACE_ID, { subscribedOnly: true });
    expect(all).toBeGreaterThanOrEqual(24);
    expect(subscribed).toBeGreaterThanOrEqual(20);
    expect(subscribed).toBeLessThan(all);
    const ann = await dir.contacts.get(DEV_WORKSPACE_ID, "ann.lee@example.org");
    expect(ann).toMatchObject({ firstName: "Ann", lastName: "Lee", timezone: "America/New_York", status: "SUBSCRIBED", properties: { plan: "free", company: "Globex", seats: 1 } });
    const timezones = new Set(devBootstrap(KEY).workspaces[0]!.contacts.map((c) => c.timezone));
    expect(timezones.size).toBeGreaterThan(20);
    // Reserved addresses only: nothing reaches a real mailbox even with a relay configured.
    for (const c of devBootstrap(KEY).workspaces[0]!.contacts) expect(c.email).toMatch(/^[a-z]+\.[a-z]+@example\.org$/);
  });

  it("is loaded at every start without changing anything the second time", async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.load(devBootstrap(KEY));
    const first = await snapshot(dir);
    await dir.bootstrap.load(devBootstrap(KEY));
    expect(await snapshot(dir)).toEqual(first);
  });

  it("upgrades the empty dev workspace an earlier version wrote, keeping its key, and leaves anything else alone", () => {
    const earlier = {
      workspaces: [{
        id: "ws_dev", name: "Development", timezone: "UTC", apiKeys: [{ key: KEY, scopes: ["api_user"] }],
        verifiedEmails: [], verifiedDomains: ["example.com"], members: ["you@example.com"],
        flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
        monthlyLimit: 100000, sendingAccountNew: false, contactProperties: [], contacts: [], templates: [],
      }],
    };
    expect(upgradedDevBootstrap(earlier)).toEqual(devBootstrap(KEY));
    expect(upgradedDevBootstrap(devBootstrap(KEY))).toBeUndefined();
    expect(upgradedDevBootstrap({ workspaces: [{ ...earlier.workspaces[0], id: "ws_mine" }] })).toBeUndefined();
    expect(upgradedDevBootstrap({ workspaces: [{ ...earlier.workspaces[0], templates: [{ name: "mine" }] }] })).toBeUndefined();
    expect(upgradedDevBootstrap("not a document")).toBeUndefined();
  });
});
