import { describe, expect, it } from "vitest";
import { memoryDirectory, snapshot } from "../testing.js";
import type { DirectoryEvent } from "@mailroom/records/change-events.js";
import { reserveSendable } from "./sendable.js";
import { erasedKey } from "./suppression.js";

const WS = "ws_erase";

describe("erasing a contact", () => {
  async function world() {
    const changes: DirectoryEvent[] = [];
    const dir = await memoryDirectory({ publishChanges: (e) => void changes.push(...e) });
    await dir.workspaces.create({ id: WS, name: "Erase", monthlyLimit: 1000 });
    await dir.workspaces.create({ id: "ws_other", name: "Other", monthlyLimit: 1000 });
    return { dir, changes };
  }

  it("deletes the contact and its events, announces CONTACT_DELETED, and keeps the address only hashed", async () => {
    const { dir, changes } = await world();
    const { contact } = await dir.contacts.upsert(WS, { email: "Ann.Lee@Example.test", firstName: "Ann" });
    await dir.events.record(WS, [
      { name: "user.signup", email: "ann.lee@example.test", properties: { plan: "pro" } },
      { name: "user.login", email: "ann.lee@example.test" },
    ]);
    const { contact: other } = await dir.contacts.upsert(WS, { email: "bob@example.test" });
    await dir.events.record(WS, [{ name: "user.signup", email: "bob@example.test" }]);
    await dir.contacts.upsert("ws_other", { email: "ann.lee@example.test" });

    const { contact: erased, eventsErased } = await dir.erasure.eraseContact(WS, "", contact._id);
    expect(erased._id).toBe(contact._id);
    expect(eventsErased).toBe(2);
    await expect(dir.contacts.getById(WS, contact._id)).rejects.toMatchObject({ code: "contact_not_found" });
    expect(changes.filter((e) => e.type === "CONTACT_DELETED").map((e) => (e.data.contact as { id: string }).id)).toEqual([contact._id]);

    // Mail to it stays suppressed (any spelling), with a reason, and the address is answered back only because it was asked.
    const hits = await dir.suppressions.check(WS, ["ANN.LEE@example.test", "bob@example.test"]);
    expect(hits).toEqual([expect.objectContaining({ emailLower: "ann.lee@example.test", reason: "manual" })]);
    const reservation = await reserveSendable(dir, WS, ["ann.lee@example.test", "bob@example.test"]);
    expect(reservation.reserved).toBe(1);
    // Other workspaces' data about the same address is theirs.
    expect(await dir.suppressions.check("ws_other", ["ann.lee@example.test"])).toEqual([]);
    expect((await dir.contacts.get("ws_other", "ann.lee@example.test")).email).toBe("ann.lee@example.test");

    // Nothing the directory stores for this workspace names the address any more (the outbox
    // of announcements holds CONTACT_DELETED until it is published, and other tenants keep theirs).
    const stored = await snapshot(dir);
    for (const [collection, docs] of Object.entries(stored)) {
      if (collection === "directory_event_outbox") continue;
      const mine = docs.filter((d) => JSON.stringify(d).includes(WS));
      expect(JSON.stringify(mine).toLowerCase(), collection).not.toContain("ann.lee");
    }
    // Only the hashed suppression is kept: effective, never listed (DESIGN §10.3).
    const kept = (await dir.store.collection("suppressions").find({ workspaceId: WS })) as unknown as Array<{ emailLower: string }>;
    expect(kept).toEqual([expect.objectContaining({ emailLower: erasedKey(WS, "ann.lee@example.test") })]);
    expect(kept[0].emailLower).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect((await dir.suppressions.list(WS)).items).toEqual([]);
    // The other contact and its events are untouched.
    expect((await dir.events.list(WS, other._id)).items).toHaveLength(1);
  });

  it("turns an existing suppression into a hashed one with its reason, and never writes the address down again", async () => {
    const { dir } = await world();
    const { contact } = await dir.contacts.upsert(WS, { email: "gone@example.test" });
    await dir.suppressions.add(WS, "gone@example.test", "hard_bounce", "550 5.1.1 <gone@example.test>: no such user");
    await dir.erasure.eraseContact(WS, "gone@example.test");
    const [hit] = await dir.suppressions.check(WS, ["gone@example.test"]);
    expect(hit).toMatchObject({ reason: "hard_bounce", emailLower: "gone@example.test" });
    expect(hit.detail).not.toContain("gone@");
    // A later unsubscribe or complaint (a message already in flight) strengthens the hashed entry.
    await dir.suppressions.add(WS, "gone@example.test", "unsubscribed");
    await dir.suppressions.add(WS, "Gone@example.test", "complaint", "arf about gone@example.test");
    const items = (await dir.store.collection("suppressions").find({ workspaceId: WS })) as unknown as Array<{ reason: string }>;
    expect(items).toHaveLength(1);
    expect(JSON.stringify(items)).not.toContain("gone@");
    expect(items[0].reason).toBe("hard_bounce");
    expect((await dir.suppressions.list(WS)).items).toEqual([]);
    // The erasure is idempotent in effect: a second call finds no contact.
    await expect(dir.erasure.eraseContact(WS, "", contact._id)).rejects.toMatchObject({ code: "contact_not_found" });
    // The operator can still lift it (the person asked for mail again).
    await dir.suppressions.remove(WS, "gone@example.test");
    expect(await dir.suppressions.check(WS, ["gone@example.test"])).toEqual([]);
  });

  it("a new contact for an erased address is not subscribed past the suppression", async () => {
    const { dir } = await world();
    const { contact } = await dir.contacts.upsert(WS, { email: "back@example.test" });
    await dir.erasure.eraseContact(WS, "", contact._id);
    await dir.contacts.upsert(WS, { email: "back@example.test", status: "SUBSCRIBED" });
    expect(await dir.suppressions.check(WS, ["back@example.test"])).toHaveLength(1);
  });
});
