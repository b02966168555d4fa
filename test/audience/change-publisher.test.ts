/**
 * The change publisher of the accounts and audience units (publish-after-commit with a recovery path): events are
 * recorded while NATS is away and published, once each, when it comes; records left behind
 * by a process that stopped are published by the next one's sweep.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { connectNats, createLogger, type NatsConnection } from "@mailroom/kit";
import { openMemoryStore } from "@mailroom/store/open.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { DIRECTORY_EVENTS_STREAM } from "@mailroom/pipeline/subjects.js";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { CHANGE_INTENTS_COLLECTION, CHANGE_OUTBOX_COLLECTION, ChangePublisher } from "@mailroom/records/change-publisher.js";
import type { ChangeIntent, DirectoryEvent } from "@mailroom/records/change-events.js";
import type { Store } from "@mailroom/store/port.js";
import { openAccountsStores } from "../../services/accounts/src/adapters/store.js";
import { eventsOfIntent as accountsEventsOfIntent } from "../../services/accounts/src/domain/changes.js";
import { openAudienceStores } from "../../services/audience/src/adapters/store.js";
import { eventsOfIntent as audienceEventsOfIntent } from "../../services/audience/src/domain/changes.js";
import { storeDirectory, TEST_SECRETS, type TestDirectory } from "../../services/audience/src/testing.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const logger = createLogger("change-publisher-test", "warn");

/**
 * Both units' recovery over one store (the test directory keeps both in one): each unit's
 * main.ts rebuilds its own kinds of intent; the other's come back empty.
 */
async function rebuilderOver(store: Store): Promise<(intent: ChangeIntent) => Promise<DirectoryEvent[]>> {
  const accounts = await openAccountsStores(store, TEST_SECRETS);
  const audience = await openAudienceStores(store);
  return async (intent) => [...(await accountsEventsOfIntent(intent, accounts)), ...(await audienceEventsOfIntent(intent, audience))];
}
const event = (id: string): DirectoryEvent => ({ id, type: "CONTACT_CREATED", createdAt: new Date().toISOString(), workspaceId: "ws_a", data: { contact: { id } } });

describe("change publisher", () => {
  let nats: NatsHandle;
  let nc: NatsConnection;
  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats(nats.url, "change-publisher-test");
    await ensureMailStreams(nc);
  });
  afterAll(async () => {
    await nc?.drain();
    await nats?.stop();
  });

  const count = async () => (await (await jetstreamManager(nc)).streams.info(DIRECTORY_EVENTS_STREAM)).state.messages;

  it("records while NATS is away, publishes each once when it comes, and a later process publishes what an earlier one left", async () => {
    const store = openMemoryStore();
    const outbox = store.collection(CHANGE_OUTBOX_COLLECTION);
    let connect!: (nc: NatsConnection) => void;
    const first = ChangePublisher.open(store, new Promise<NatsConnection>((r) => (connect = r)), logger);
    first.publish([event("dev_a"), event("dev_b")]);
    first.publish([event("dev_a")]); // the same write announced twice
    await sleep(100);
    expect(await outbox.countDocuments({})).toBe(2);
    expect(await count()).toBe(0);
    // This process stops before NATS comes: its records stay.
    await Promise.race([first.stop(), sleep(200)]);

    const second = ChangePublisher.open(store, Promise.resolve(nc), logger);
    second.startSweep();
    for (let i = 0; i < 100 && (await outbox.countDocuments({})) > 0; i++) await sleep(25);
    expect(await outbox.countDocuments({})).toBe(0);
    expect(await count()).toBe(2);
    connect(nc); // the first one's late publish is dropped by message id
    second.publish([event("dev_b"), event("dev_c")]);
    for (let i = 0; i < 100 && (await count()) < 3; i++) await sleep(25);
    await sleep(200);
    expect(await count()).toBe(3);
    await second.stop();
  });
});

/**
 * A process killed after a write committed and before its events were recorded: the write's
 * intent, recorded before it, lets the next process rebuild exactly those events. Each step
 * below runs once announcing normally and once "killed" (its events never recorded), and the
 * recovered events must be the ones announced, id for id.
 */
describe("write intents", () => {
  type Step = [string, (dir: TestDirectory) => Promise<unknown>];
  const steps: Step[] = [
    ["create", (d) => d.contacts.create("ws_a", { email: "ada@example.test", firstName: "Ada" })],
    ["update", (d) => d.contacts.update("ws_a", { email: "ada@example.test", lastName: "King" })],
    ["unsubscribe", (d) => d.suppressions.add("ws_a", "ada@example.test", "unsubscribed", "one-click")],
    ["resubscribe", (d) => d.contacts.update("ws_a", { email: "ada@example.test", status: "SUBSCRIBED" })],
    ["batch", (d) => d.contacts.batchUpsert("ws_a", [{ email: "new@example.test" }, { email: "ada@example.test", firstName: "Augusta" }])],
    ["complaint", (d) => d.outcomes.record({ kind: "complaint", workspaceId: "ws_a", recipient: "new@example.test", detail: "abuse" })],
    ["property", (d) => d.properties.create("ws_a", { slug: "plan", displayName: "Plan", type: "string" })],
    ["member", (d) => d.members.add("ws_a", "owner@example.test")],
    ["pause", (d) => d.workspaces.setSendingPaused("ws_a", true, "abuse report")],
    ["delete", (d) => d.contacts.delete("ws_a", "ada@example.test")],
    ["no-op", (d) => d.contacts.update("ws_a", { email: "new@example.test" })],
    // An import's batch: its intent names the keys alone, recovery reads the suppressions back.
    ["import", (d) => d.suppressions.addMany("ws_a", [
      { email: "imp1@example.test", source: "old.csv", createdAt: new Date("2025-01-02T03:04:05Z") },
      { email: "imp2@example.test", reason: "hard_bounce" },
      { domain: "blocked.example" },
      { email: "new@example.test" },
    ])],
  ];
  const clock = () => {
    let tick = Date.parse("2026-01-01T00:00:00Z");
    return () => new Date((tick += 1000));
  };
  /** Ids of contacts and properties are random: events compared without them (a contact still shows its email). */
  const comparable = (e: DirectoryEvent) => JSON.stringify(e, (key, value) => (key === "id" ? undefined : value));

  it("rebuild, after a kill between a write and its events' record, the events that write announces", async () => {
    const announced = new Map<string, string[]>();
    {
      let current: DirectoryEvent[] = [];
      const dir = await storeDirectory(openMemoryStore(), { publishChanges: (e) => void current.push(...e), now: clock() });
      await dir.workspaces.create({ id: "ws_a", name: "A" });
      for (const [name, run] of steps) {
        current = [];
        await run(dir);
        announced.set(name, current.map(comparable));
      }
    }
    const store = openMemoryStore();
    const publisher = ChangePublisher.open(store, new Promise<NatsConnection>(() => {}), logger);
    // Every write's process "dies" after the write: its events are never recorded.
    const dir = await storeDirectory(store, { publishChanges: () => {}, intendChanges: publisher.intend, now: clock() });
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    const outbox = store.collection<{ _id: string; body: string }>(CHANGE_OUTBOX_COLLECTION);
    const rebuild = await rebuilderOver(store);
    const seen = new Set<string>();
    for (const [name, run] of steps) {
      await run(dir);
      // (A no-op update never reaches the store: no write, no intent.)
      // Some steps are two writes, each with its intent (an unsubscribe: the suppression and the contact).
      const intents = await store.collection(CHANGE_INTENTS_COLLECTION).countDocuments({});
      if (name === "no-op") expect(intents, name).toBe(0);
      else expect(intents, name).toBeGreaterThanOrEqual(1);
      await publisher.recover(rebuild);
      expect(await store.collection(CHANGE_INTENTS_COLLECTION).countDocuments({}), name).toBe(0);
      const recovered = (await outbox.find({}, { sort: { seq: 1 } })).filter((r) => !seen.has(r._id));
      recovered.forEach((r) => seen.add(r._id));
      // Within one write in order; two writes of a step (suppression, contact) are recovered in either order.
      // (A write's several suppression events travel as one batch record.)
      const bodies = recovered.flatMap((r) => (JSON.parse(r.body) as { events?: DirectoryEvent[] }).events ?? [JSON.parse(r.body) as DirectoryEvent]);
      expect(bodies.map(comparable).sort(), name).toEqual([...announced.get(name)!].sort());
    }
    expect([...announced.values()].flat().length).toBeGreaterThan(10);
    // Recovering a write whose events did go out rebuilds the same ids: the outbox keeps one record each.
    const before = await outbox.countDocuments({});
    await dir.contacts.update("ws_a", { email: "new@example.test", firstName: "Nu" });
    await publisher.recover(rebuild);
    const last = await outbox.countDocuments({});
    expect(last).toBe(before + 1);
    const intent = { id: "again", at: new Date().toISOString(), workspaceId: "ws_a", kind: "contacts" as const, contacts: [] };
    await publisher.intend(intent);
    await publisher.recover(rebuild);
    expect(await outbox.countDocuments({})).toBe(last);
    await Promise.race([publisher.stop(), sleep(200)]);
  });
});
