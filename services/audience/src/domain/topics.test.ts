import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { openMemoryStore } from "@mailroom/store/open.js";
import { storeDirectory } from "../testing.js";
import { TopicStore } from "../adapters/topic-store.js";
import { receivesTopic, Topics } from "./topics.js";

const codeOf = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e) => e))?.code;

async function setup() {
  const store = openMemoryStore();
  const dir = await storeDirectory(store);
  await dir.workspaces.create({ id: "ws_a", name: "A" });
  await dir.workspaces.create({ id: "ws_b", name: "B" });
  const topics = new Topics(await TopicStore.open(store), dir.workspaces);
  const contacts = store.collection("contacts");
  return { dir, topics, contacts, store };
}

describe("topics", () => {
  it("a contact receives an OPT_IN topic only when it chose it, an OPT_OUT topic unless it left it", () => {
    const optIn = { _id: "top_1", defaultSubscription: "OPT_IN" as const };
    const optOut = { _id: "top_2", defaultSubscription: "OPT_OUT" as const };
    expect([receivesTopic(optIn, undefined), receivesTopic(optIn, { top_1: true }), receivesTopic(optIn, { top_1: false }), receivesTopic(optIn, { top_2: true })])
      .toEqual([false, true, false, false]);
    expect([receivesTopic(optOut, undefined), receivesTopic(optOut, { top_2: true }), receivesTopic(optOut, { top_2: false }), receivesTopic(optOut, { top_1: false })])
      .toEqual([true, true, false, true]);
  });

  it("creates, reads, changes, lists and deletes; names unique per workspace", async () => {
    const { topics } = await setup();
    const news = await topics.create("ws_a", { name: "  News ", description: "Monthly", defaultSubscription: "OPT_OUT" });
    expect(news).toMatchObject({ _id: expect.stringMatching(/^top_[0-9a-z]{26}$/), workspaceId: "ws_a", name: "News", description: "Monthly", defaultSubscription: "OPT_OUT" });
    expect(news.updatedAt).toBeUndefined();
    expect(await codeOf(topics.create("ws_a", { name: "News", defaultSubscription: "OPT_IN" }))).toBe("topic_name_taken");
    const other = await topics.create("ws_b", { name: "News", defaultSubscription: "OPT_IN" }); // another workspace: its own
    const events = await topics.create("ws_a", { name: "Events", defaultSubscription: "OPT_IN" });
    expect(events.description).toBeUndefined();
    expect(await topics.get("ws_a", news._id)).toEqual(news);

    expect(await codeOf(topics.update("ws_a", events._id, { name: "News" }))).toBe("topic_name_taken");
    const renamed = await topics.update("ws_a", events._id, { name: "Meetups", description: "In person", defaultSubscription: "OPT_OUT" });
    expect(renamed).toMatchObject({ name: "Meetups", description: "In person", defaultSubscription: "OPT_OUT", updatedAt: expect.any(Date) });
    const cleared = await topics.update("ws_a", events._id, { description: "" });
    expect(cleared.description).toBeUndefined();
    expect(await topics.update("ws_a", events._id, { name: "Meetups" })).toEqual(cleared); // nothing changes: as it was

    const page1 = await topics.list("ws_a", { limit: 1 });
    expect(page1).toMatchObject({ items: [{ _id: news._id }], hasMore: true, nextCursor: news._id });
    const page2 = await topics.list("ws_a", { limit: 1, cursor: page1.nextCursor });
    expect(page2).toMatchObject({ items: [{ _id: events._id }], hasMore: false, nextCursor: "" });

    expect((await topics.delete("ws_a", news._id))._id).toBe(news._id);
    expect(await codeOf(topics.get("ws_a", news._id))).toBe("topic_not_found");
    expect(await codeOf(topics.delete("ws_a", news._id))).toBe("topic_not_found");
    expect((await topics.get("ws_b", other._id)).name).toBe("News");
    // The name is free again.
    expect((await topics.create("ws_a", { name: "News", defaultSubscription: "OPT_IN" })).name).toBe("News");
  });

  it("never reaches another workspace's topic", async () => {
    const { topics } = await setup();
    const t = await topics.create("ws_a", { name: "Private", defaultSubscription: "OPT_IN" });
    expect(await codeOf(topics.get("ws_b", t._id))).toBe("topic_not_found");
    expect(await codeOf(topics.update("ws_b", t._id, { name: "Stolen" }))).toBe("topic_not_found");
    expect(await codeOf(topics.delete("ws_b", t._id))).toBe("topic_not_found");
    expect((await topics.list("ws_b")).items).toEqual([]);
    expect((await topics.get("ws_a", t._id)).name).toBe("Private");
  });

  it("refuses bad input with clear codes", async () => {
    const { topics } = await setup();
    expect(await codeOf(topics.create("ws_a", { name: "", defaultSubscription: "OPT_IN" }))).toBe("invalid_topic");
    expect(await codeOf(topics.create("ws_a", { name: "a\nb", defaultSubscription: "OPT_IN" }))).toBe("invalid_topic");
    expect(await codeOf(topics.create("ws_a", { name: "x".repeat(101), defaultSubscription: "OPT_IN" }))).toBe("invalid_topic");
    expect(await codeOf(topics.create("ws_a", { name: "ok", defaultSubscription: "opt_in" }))).toBe("invalid_topic");
    expect(await codeOf(topics.create("ws_a", { name: "ok", description: "d".repeat(501), defaultSubscription: "OPT_IN" }))).toBe("invalid_topic");
    expect(await codeOf(topics.create("ws_nope", { name: "ok", defaultSubscription: "OPT_IN" }))).toBe("workspace_not_found");
    expect(await codeOf(topics.get("ws_a", "nope"))).toBe("topic_not_found");
    expect(await codeOf(topics.list("ws_a", { cursor: "ctc_x" }))).toBe("invalid_cursor");
    expect(await codeOf(topics.list("ws_a", { limit: 101 }))).toBe("invalid_request");
    expect((await topics.list("ws_a")).items).toEqual([]);
  });

  it("a contact's choices: explicit ones stored on the contact, defaults otherwise; deleting a topic forgets them", async () => {
    const { dir, topics, contacts } = await setup();
    const ann = await dir.contacts.create("ws_a", { email: "Ann@Example.test" });
    const bob = await dir.contacts.create("ws_a", { email: "bob@example.test" });
    const news = await topics.create("ws_a", { name: "News", defaultSubscription: "OPT_OUT" });
    const events = await topics.create("ws_a", { name: "Events", defaultSubscription: "OPT_IN" });
    const state = (v: { topics: Array<{ topic: { _id: string }; subscribed: boolean; explicit: boolean }> }) =>
      v.topics.map((t) => [t.topic._id, t.subscribed, t.explicit]);

    expect(state(await topics.ofContact("ws_a", { contactId: ann._id }))).toEqual([[news._id, true, false], [events._id, false, false]]);
    const chosen = await topics.choose("ws_a", { contactId: ann._id }, [{ topicId: news._id, subscribed: false }, { topicId: events._id, subscribed: true }]);
    expect(chosen.contactId).toBe(ann._id);
    expect(state(chosen)).toEqual([[news._id, false, true], [events._id, true, true]]);
    expect((await contacts.findOne({ _id: ann._id }))?.topics).toEqual({ [news._id]: false, [events._id]: true });
    // By address too (the recipient links); other contacts keep their defaults.
    expect(state(await topics.ofContact("ws_a", { email: "ann@example.TEST" }))).toEqual([[news._id, false, true], [events._id, true, true]]);
    expect(state(await topics.ofContact("ws_a", { contactId: bob._id }))).toEqual([[news._id, true, false], [events._id, false, false]]);
    // A later choice changes only the topics it names.
    expect(state(await topics.choose("ws_a", { email: "ann@example.test" }, [{ topicId: news._id, subscribed: true }]))).toEqual([[news._id, true, true], [events._id, true, true]]);

    await topics.choose("ws_a", { contactId: bob._id }, [{ topicId: events._id, subscribed: true }]);
    await topics.delete("ws_a", events._id);
    expect((await contacts.findOne({ _id: ann._id }))?.topics).toEqual({ [news._id]: true });
    expect((await contacts.findOne({ _id: bob._id }))?.topics).toEqual({});
    expect(state(await topics.ofContact("ws_a", { contactId: bob._id }))).toEqual([[news._id, true, false]]);
  });

  it("refuses unknown topics, duplicates, other workspaces' contacts and topics, and changes nothing", async () => {
    const { dir, topics, contacts } = await setup();
    const ann = await dir.contacts.create("ws_a", { email: "ann@example.test" });
    const bAnn = await dir.contacts.create("ws_b", { email: "ann@example.test" });
    const news = await topics.create("ws_a", { name: "News", defaultSubscription: "OPT_OUT" });
    const bNews = await topics.create("ws_b", { name: "News", defaultSubscription: "OPT_OUT" });
    expect(await codeOf(topics.choose("ws_a", { contactId: ann._id }, [{ topicId: news._id, subscribed: false }, { topicId: bNews._id, subscribed: false }]))).toBe("unknown_topic");
    expect(await codeOf(topics.choose("ws_a", { contactId: ann._id }, [{ topicId: news._id, subscribed: false }, { topicId: news._id, subscribed: true }]))).toBe("invalid_request");
    expect(await codeOf(topics.choose("ws_a", { contactId: ann._id }, [{ topicId: news._id, subscribed: "no" as unknown as boolean }]))).toBe("invalid_request");
    expect(await codeOf(topics.choose("ws_a", { contactId: bAnn._id }, [{ topicId: news._id, subscribed: false }]))).toBe("contact_not_found");
    expect(await codeOf(topics.ofContact("ws_a", { contactId: bAnn._id }))).toBe("contact_not_found");
    expect(await codeOf(topics.ofContact("ws_a", { email: "nobody@example.test" }))).toBe("contact_not_found");
    expect(await codeOf(topics.ofContact("ws_a", { email: "not an address" }))).toBe("contact_not_found");
    expect((await contacts.findOne({ _id: ann._id }))?.topics).toBeUndefined();
    expect((await contacts.findOne({ _id: bAnn._id }))?.topics).toBeUndefined();
    // An empty list changes nothing and answers the state.
    expect((await topics.choose("ws_a", { contactId: ann._id }, [])).topics).toHaveLength(1);
  });
});
