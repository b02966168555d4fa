import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { memoryDirectory, type TestDirectory } from "../testing.js";
import { openForms } from "../form-routes.js";
import type { Forms } from "./forms.js";

const codeOf = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e) => e))?.code;

interface Setup { dir: TestDirectory; forms: Forms; clock: { now: Date } }

async function setup(): Promise<Setup> {
  const dir = await memoryDirectory();
  await dir.workspaces.create({ id: "ws_a", name: "Acme" });
  await dir.workspaces.create({ id: "ws_b", name: "Other" });
  await dir.workspaces.create({ id: "ws_none", name: "No sender" });
  await dir.senders.addEmail("ws_a", "news@acme.test", true);
  await dir.properties.create("ws_a", { slug: "plan", type: "string" });
  await dir.properties.create("ws_a", { slug: "seats", type: "number" });
  const at = new Date("2026-01-01T00:00:00Z");
  await dir.store.collection("groups").insertMany([
    { _id: "grp_news", workspaceId: "ws_a", publicId: "newsletter", createdAt: at },
    { _id: "grp_b", workspaceId: "ws_b", publicId: "theirs", createdAt: at },
  ]);
  await dir.store.collection("topics").insertMany([
    { _id: "top_prod", workspaceId: "ws_a", name: "Product", defaultSubscription: "OPT_IN", createdAt: at },
    { _id: "top_b", workspaceId: "ws_b", name: "B", defaultSubscription: "OPT_IN", createdAt: at },
  ]);
  const clock = { now: new Date() }; // near real time: the records expire a day after (a TTL index)
  const forms = await openForms(dir.store, dir, { resendIntervalMs: 10 * 60_000, now: () => clock.now });
  return { dir, forms, clock };
}

const contactDoc = (dir: TestDirectory, email: string) => dir.store.collection("contacts").findOne({ workspaceId: "ws_a", emailLower: email });

describe("signup forms", () => {
  it("refuses a layout or a snippet as the confirmation email (neither can be sent on its own)", async () => {
    const { dir, forms } = await setup();
    await dir.templates.create("ws_a", { name: "frame", kind: "layout", subject: "", html: "<html><body>{{ content }}</body></html>" });
    await dir.templates.create("ws_a", { name: "footer", kind: "snippet", subject: "", html: "<p>Bye</p>" });
    await dir.templates.create("ws_a", { name: "confirm", subject: "Confirm", html: '<a href="{{confirmUrl}}">Confirm</a>' });
    expect(await codeOf(forms.create("ws_a", { name: "x", confirmTemplate: "frame" }))).toBe("invalid_template");
    expect(await codeOf(forms.create("ws_a", { name: "x", confirmTemplate: "footer" }))).toBe("invalid_template");
    expect((await forms.create("ws_a", { name: "x", confirmTemplate: "confirm" })).confirmTemplate).toBe("confirm");
  });

  it("creates, reads, lists, changes and deletes forms, validating fields, groups, topics and the sender", async () => {
    const { forms } = await setup();
    const f = await forms.create("ws_a", {
      name: " Footer ", fields: ["firstName", { name: "plan", label: "Your plan", required: true }], groups: ["newsletter"], topics: ["top_prod"],
      doubleOptIn: true, redirectUrl: "https://acme.test/thanks",
    });
    expect(f._id).toMatch(/^frm_[0-9a-z]{26}$/);
    expect(f).toMatchObject({
      name: "Footer", groups: ["grp_news"], topics: ["top_prod"], doubleOptIn: true, redirectUrl: "https://acme.test/thanks",
      fields: [
        { name: "email", label: "Email", required: true },
        { name: "firstName", label: "First name", required: false },
        { name: "plan", label: "Your plan", required: true },
      ],
    });
    expect(await codeOf(forms.create("ws_a", { name: "x", fields: ["nope"] }))).toBe("invalid_form");
    expect(await codeOf(forms.create("ws_a", { name: "x", fields: ["plan", "plan"] }))).toBe("invalid_form");
    expect(await codeOf(forms.create("ws_a", { name: "x", groups: ["theirs"] }))).toBe("invalid_form"); // another workspace's group
    expect(await codeOf(forms.create("ws_a", { name: "x", topics: ["top_b"] }))).toBe("invalid_form");
    expect(await codeOf(forms.create("ws_a", { name: "x", redirectUrl: "javascript:alert(1)" }))).toBe("invalid_form");
    expect(await codeOf(forms.create("ws_a", { name: "" }))).toBe("invalid_form");
    expect(await codeOf(forms.create("ws_a", { name: "x", fromEmail: "someone@elsewhere.test" }))).toBe("invalid_from");
    expect(await codeOf(forms.create("ws_a", { name: "x", confirmTemplate: "missing" }))).toBe("template_not_found");
    // A double opt-in form must have someone to send its confirmation as.
    expect(await codeOf(forms.create("ws_none", { name: "x", doubleOptIn: true }))).toBe("invalid_from");
    expect((await forms.create("ws_none", { name: "x" })).fields).toEqual([{ name: "email", label: "Email", required: true }]);

    const changed = await forms.update("ws_a", f._id, { name: "Renamed", redirectUrl: "" }, ["name", "redirectUrl"]);
    expect(changed).toMatchObject({ name: "Renamed", groups: ["grp_news"], doubleOptIn: true });
    expect(changed.redirectUrl).toBeUndefined();
    expect(await codeOf(forms.update("ws_a", f._id, { groups: ["nope"] }, ["groups"]))).toBe("invalid_form");
    expect((await forms.get("ws_a", f._id)).name).toBe("Renamed");

    const more = [await forms.create("ws_a", { name: "B" }), await forms.create("ws_a", { name: "C" })];
    const p1 = await forms.list("ws_a", { limit: 2 });
    expect(p1.items.map((x) => x.name)).toEqual(["Renamed", "B"]);
    expect(p1.hasMore).toBe(true);
    const p2 = await forms.list("ws_a", { limit: 2, cursor: p1.nextCursor });
    expect(p2).toMatchObject({ hasMore: false, nextCursor: "" });
    expect(p2.items.map((x) => x._id)).toEqual([more[1]!._id]);
    expect(await codeOf(forms.list("ws_a", { cursor: "garbage" }))).toBe("invalid_cursor");

    // Another workspace never sees, changes or deletes it.
    expect(await codeOf(forms.get("ws_b", f._id))).toBe("form_not_found");
    expect(await codeOf(forms.update("ws_b", f._id, { name: "X" }, ["name"]))).toBe("form_not_found");
    expect(await codeOf(forms.delete("ws_b", f._id))).toBe("form_not_found");
    expect((await forms.list("ws_b", {})).items).toEqual([]);
    expect((await forms.delete("ws_a", f._id))._id).toBe(f._id);
    expect(await codeOf(forms.get("ws_a", f._id))).toBe("form_not_found");
    expect(await codeOf(forms.submit(f._id, "ann@example.test", {}))).toBe("form_not_found");
  });

  it("without double opt-in subscribes at once and joins the groups and topics", async () => {
    const { dir, forms } = await setup();
    const f = await forms.create("ws_a", { name: "Open", fields: ["firstName", "seats"], groups: ["grp_news"], topics: ["top_prod"] });
    const r = await forms.submit(f._id, "Ann@Example.test", { firstName: "Ann", seats: "3", ignored: "x" });
    expect(r).toMatchObject({ outcome: "SUBSCRIBED", email: "Ann@example.test" });
    const doc = await contactDoc(dir, "ann@example.test");
    expect(doc).toMatchObject({ status: "SUBSCRIBED", firstName: "Ann", properties: { seats: 3 }, groups: ["grp_news"], topics: { top_prod: true } });
    expect((doc as unknown as { groupsAddedAt: Record<string, Date> }).groupsAddedAt.grp_news).toBeInstanceOf(Date);
    expect(await codeOf(forms.submit(f._id, "not an address", {}))).toBe("invalid_email");
    expect(await codeOf(forms.submit(f._id, "bob@example.test", { seats: "many" }))).toBe("invalid_property_value");
    // An unsubscribed contact is not resubscribed by a form without confirmation.
    await dir.contacts.upsert("ws_a", { email: "gone@example.test", status: "UNSUBSCRIBED" });
    expect((await forms.submit(f._id, "gone@example.test", {})).outcome).toBe("IGNORED");
    expect(await contactDoc(dir, "gone@example.test")).toMatchObject({ status: "UNSUBSCRIBED" });
  });

  it("with double opt-in: pending, one confirmation per interval, and the confirmation subscribes and joins", async () => {
    const { dir, forms, clock } = await setup();
    const f = await forms.create("ws_a", { name: "DOI", fields: [{ name: "plan", required: true }], groups: ["grp_news"], topics: ["top_prod"], doubleOptIn: true });
    expect(await codeOf(forms.submit(f._id, "cat@example.test", {}))).toBe("invalid_request"); // plan is required
    const r = await forms.submit(f._id, "cat@example.test", { plan: "pro" });
    expect(r).toMatchObject({ outcome: "CONFIRMATION_DUE", fromEmail: "news@acme.test", workspaceName: "Acme", email: "cat@example.test" });
    const pending = await contactDoc(dir, "cat@example.test");
    expect(pending).toMatchObject({ status: "OPT_IN_PENDING", properties: { plan: "pro" } });
    expect(pending?.groups).toBeUndefined();
    // Again within the interval: still pending, no second email.
    clock.now = new Date(clock.now.getTime() + 5 * 60_000);
    expect((await forms.submit(f._id, "cat@example.test", { plan: "pro" })).outcome).toBe("CONFIRMATION_THROTTLED");
    clock.now = new Date(clock.now.getTime() + 6 * 60_000);
    expect((await forms.submit(f._id, "cat@example.test", { plan: "pro" })).outcome).toBe("CONFIRMATION_DUE");

    // A link for another address, or another workspace, confirms nothing.
    expect(await codeOf(forms.confirm("ws_a", f._id, r.contactId, "dog@example.test"))).toBe("contact_not_found");
    expect(await codeOf(forms.confirm("ws_b", f._id, r.contactId, "cat@example.test"))).toBe("contact_not_found");
    expect(await contactDoc(dir, "cat@example.test")).toMatchObject({ status: "OPT_IN_PENDING" });

    expect(await forms.confirm("ws_a", f._id, r.contactId, "cat@example.test")).toMatchObject({ confirmed: true, email: "cat@example.test" });
    expect(await contactDoc(dir, "cat@example.test")).toMatchObject({ status: "SUBSCRIBED", groups: ["grp_news"], topics: { top_prod: true } });
    expect((await forms.confirm("ws_a", f._id, r.contactId, "cat@example.test")).confirmed).toBe(false);

    // A confirmed (SUBSCRIBED) contact is never downgraded and gets no email; its explicit topic opt-out stays.
    await dir.store.collection("contacts").updateOne({ _id: r.contactId }, { $set: { "topics.top_prod": false } });
    expect((await forms.submit(f._id, "cat@example.test", { plan: "pro" })).outcome).toBe("ALREADY_SUBSCRIBED");
    expect(await contactDoc(dir, "cat@example.test")).toMatchObject({ status: "SUBSCRIBED", topics: { top_prod: false } });

    // An existing subscriber made outside the form is not downgraded either.
    await dir.contacts.upsert("ws_a", { email: "sub@example.test", status: "SUBSCRIBED" });
    expect((await forms.submit(f._id, "sub@example.test", { plan: "x" })).outcome).toBe("ALREADY_SUBSCRIBED");
    expect(await contactDoc(dir, "sub@example.test")).toMatchObject({ status: "SUBSCRIBED", groups: ["grp_news"] });

    // A deleted contact's link confirms nothing.
    const d = await forms.submit(f._id, "del@example.test", { plan: "x" });
    await dir.contacts.delete("ws_a", "del@example.test");
    expect(await codeOf(forms.confirm("ws_a", f._id, d.contactId, "del@example.test"))).toBe("contact_not_found");
  });

  it("the hosted page's fields carry their types and options", async () => {
    const { dir, forms } = await setup();
    await dir.properties.create("ws_a", { slug: "tier", type: "select", options: ["free", "pro"] });
    const f = await forms.create("ws_a", { name: "Page", fields: ["firstName", "seats", "tier"] });
    const view = await forms.publicForm(f._id);
    expect(view.workspaceName).toBe("Acme");
    expect(view.fields.map((x) => [x.name, x.type, x.options])).toEqual([
      ["email", "email", []], ["firstName", "string", []], ["seats", "number", []], ["tier", "select", ["free", "pro"]],
    ]);
    expect(await codeOf(forms.publicForm("frm_00000000000000000000000000"))).toBe("form_not_found");
    expect(await codeOf(forms.publicForm("../etc"))).toBe("form_not_found");
  });
});
