import { describe, expect, it } from "vitest";
import { memoryDirectory } from "../testing.js";
import type { DirectoryEvent } from "@mailroom/records/change-events.js";

/** Every path that changes a contact emits at the write (changes.ts), with ids derived from the write. */
describe("directory change events", () => {
  async function setup() {
    const events: DirectoryEvent[] = [];
    let tick = Date.parse("2026-01-01T00:00:00Z");
    const dir = await memoryDirectory({ publishChanges: (e) => void events.push(...e), now: () => new Date((tick += 1000)) });
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    events.length = 0;
    const of = (type: string) => events.filter((e) => e.type === type);
    return { dir, events, of };
  }

  it("operator pause and ban: one event per change, none when lifted or repeated; sends and keys refused while they hold", async () => {
    const { dir, events, of } = await setup();
    const { plain, key } = await dir.keys.create("ws_a", { scopes: ["api_user"] });
    expect((await dir.workspaces.setSendingPaused("ws_a", true, "abuse report")).changed).toBe(true);
    expect((await dir.workspaces.setSendingPaused("ws_a", true, "again")).changed).toBe(false);
    expect(of("WORKSPACE_SENDING_EMAILS_PAUSED")).toHaveLength(1);
    expect(of("WORKSPACE_SENDING_EMAILS_PAUSED")[0]).toMatchObject({ workspaceId: "ws_a", data: { reason: "abuse report", workspace: { id: "ws_a", sendingPaused: true, sendingPausedReason: "abuse report" } } });
    await expect(dir.usage.reserve("ws_a", 1)).rejects.toMatchObject({ code: "sending_paused", httpStatus: 403 });
    expect((await dir.keys.authenticate(plain)).workspaceId).toBe("ws_a");
    await dir.workspaces.setSendingPaused("ws_a", false);
    expect((await dir.usage.reserve("ws_a", 1)).granted).toBe(true);
    await dir.workspaces.setBanned("ws_a", true);
    await expect(dir.keys.authenticate(plain)).rejects.toMatchObject({ code: "workspace_banned", httpStatus: 403 });
    // Console sessions re-check their key through GetApiKey: ended by the ban too.
    await expect(dir.keys.getActive("ws_a", key._id)).rejects.toMatchObject({ code: "workspace_banned" });
    await expect(dir.usage.reserve("ws_a", 1)).rejects.toMatchObject({ code: "workspace_banned" });
    await dir.workspaces.setBanned("ws_a", false);
    expect((await dir.keys.authenticate(plain)).workspaceId).toBe("ws_a");
    // A second pause is a second event (its own id).
    await dir.workspaces.setSendingPaused("ws_a", true);
    expect(events.map((e) => e.type)).toEqual(["WORKSPACE_SENDING_EMAILS_PAUSED", "WORKSPACE_BANNED", "WORKSPACE_SENDING_EMAILS_PAUSED"]);
    expect(new Set(events.map((e) => e.id)).size).toBe(3);
    await expect(dir.workspaces.setBanned("ws_a", true, "x".repeat(501))).rejects.toMatchObject({ code: "invalid_request" });
  });

  it("API create, update, delete: created, updated with its changes, deleted as it was; a no-op update emits nothing", async () => {
    const { dir, events, of } = await setup();
    const c = await dir.contacts.create("ws_a", { email: "ada@example.test", firstName: "Ada" });
    expect(of("CONTACT_CREATED")).toHaveLength(1);
    expect(of("CONTACT_CREATED")[0]).toMatchObject({ workspaceId: "ws_a", data: { contact: { id: c._id, properties: { email: "ada@example.test", firstName: "Ada", status: "SUBSCRIBED" } } } });
    await dir.contacts.update("ws_a", { email: c.email, lastName: "King", properties: {} }, c._id);
    expect(of("CONTACT_UPDATED").map((e) => e.data.changes)).toEqual([["lastName"]]);
    await dir.contacts.update("ws_a", { email: c.email, lastName: "King" }, c._id);
    expect(of("CONTACT_UPDATED")).toHaveLength(1);
    await dir.contacts.update("ws_a", { email: c.email, status: "UNSUBSCRIBED" }, c._id);
    await dir.contacts.update("ws_a", { email: c.email, status: "SUBSCRIBED" }, c._id);
    expect(of("CONTACT_UNSUBSCRIBED")).toHaveLength(1);
    expect(of("CONTACT_RESUBSCRIBED")).toHaveLength(1);
    const before = events.length;
    await dir.contacts.delete("ws_a", c.email);
    expect(events.slice(before).map((e) => e.type)).toEqual(["CONTACT_DELETED"]);
    expect((events.at(-1)!.data.contact as { properties: { lastName: string } }).properties.lastName).toBe("King");
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  });

  it("batch upsert and a CSV-style import: one CONTACT_CREATED per new contact, CONTACT_UPDATED per changed one", async () => {
    const { dir, of } = await setup();
    await dir.contacts.create("ws_a", { email: "old@example.test" });
    await dir.contacts.batchUpsert("ws_a", [{ email: "new@example.test" }, { email: "old@example.test", firstName: "Old" }]);
    expect(of("CONTACT_CREATED").map((e) => (e.data.contact as { properties: { email: string } }).properties.email)).toEqual(["old@example.test", "new@example.test"]);
    expect(of("CONTACT_UPDATED").map((e) => e.data.changes)).toEqual([["firstName"]]);
    await dir.contacts.batchUpsert("ws_a", [{ email: "csv@example.test", source: "CSV_IMPORT", textProperties: { firstName: "Cee", subscribed: "no" } }]);
    expect(of("CONTACT_CREATED").at(-1)!.data.contact).toMatchObject({ source: "CSV_IMPORT", properties: { status: "UNSUBSCRIBED", firstName: "Cee" } });
  });

  it("a send's contactProperties create the contact and the property; a mailto/one-click suppression and a complaint unsubscribe it", async () => {
    const { dir, of } = await setup();
    await dir.contacts.upsert("ws_a", { email: "tx@example.test", source: "TRANSACTIONAL_EMAIL", properties: { plan: "pro" } }, { createMissingProperties: true });
    expect(of("CONTACT_PROPERTY_UPDATED").map((e) => (e.data.property as { apiSlug: string }).apiSlug)).toEqual(["plan"]);
    expect(of("CONTACT_CREATED")).toHaveLength(1);
    await dir.contacts.create("ws_a", { email: "sub@example.test" });
    await dir.contacts.create("ws_a", { email: "angry@example.test" });
    await dir.suppressions.add("ws_a", "sub@example.test", "unsubscribed", "mailto");
    await dir.suppressions.add("ws_a", "sub@example.test", "unsubscribed", "mailto again");
    await dir.outcomes.record({ kind: "complaint", workspaceId: "ws_a", recipient: "angry@example.test", detail: "abuse" });
    expect(of("CONTACT_UNSUBSCRIBED").map((e) => e.data.reason)).toEqual(["unsubscribed", "complaint"]);
    expect(of("CONTACT_UPDATED").map((e) => e.data.changes)).toEqual([["status"], ["status"]]);
  });

  it("property definitions created and changed; a member added once", async () => {
    const { dir, of } = await setup();
    const p = await dir.properties.create("ws_a", { displayName: "Company", type: "string" });
    await dir.properties.update("ws_a", p.id, { displayName: "Company name" });
    expect(of("CONTACT_PROPERTY_UPDATED").map((e) => (e.data.property as { displayName: string }).displayName)).toEqual(["Company", "Company name"]);
    await dir.members.add("ws_a", "owner@acme.test");
    await dir.members.add("ws_a", "Owner@acme.test");
    expect(of("WORKSPACE_TEAM_MEMBER_JOINED").map((e) => e.data.member)).toEqual([expect.objectContaining({ email: "owner@acme.test" })]);
  });
});
