/**
 * The directory's change publisher (publish-after-commit with a recovery path): events are
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
import { CHANGE_OUTBOX_COLLECTION, ChangePublisher } from "../../services/directory/src/adapters/change-publisher.js";
import type { DirectoryEvent } from "../../services/directory/src/domain/changes.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const logger = createLogger("directory", "warn");
const event = (id: string): DirectoryEvent => ({ id, type: "CONTACT_CREATED", createdAt: new Date().toISOString(), workspaceId: "ws_a", data: { contact: { id } } });

describe("directory change publisher", () => {
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
