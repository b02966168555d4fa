import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { startNats, type NatsHandle } from "../../../../test/harness/nats.js";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { INBOUND_BUCKET, ObjectStoreContents } from "./object-contents.js";

const DAY_MS = 86_400_000;

describe("received bytes in JetStream's object store", () => {
  let nats: NatsHandle;
  let nc: NatsConnection;
  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats(nats.url, "inbound-objects-test");
  });
  afterAll(async () => {
    await nc?.close();
    await nats?.stop();
  });

  it("gives back what was put, in chunks, and null for an object it does not hold", async () => {
    const contents = await ObjectStoreContents.open(nc, { retentionMs: 30 * DAY_MS, replicas: 1 });
    const data = randomBytes(300_000);
    await contents.put("ws_a/rcv_1/att_1", data);
    const chunks: Uint8Array[] = [];
    for await (const c of (await contents.get("ws_a/rcv_1/att_1"))!) chunks.push(c);
    expect(chunks.length).toBeGreaterThan(1);
    expect(Buffer.compare(Buffer.concat(chunks), data)).toBe(0);
    expect(await contents.get("ws_a/rcv_1/att_2")).toBeNull();
    expect(await contents.get("ws_b/rcv_1/att_1")).toBeNull();
  });

  it("keeps objects as long as the retention says: the bucket's TTL, updated when the setting changes", async () => {
    const jsm = await jetstreamManager(nc);
    await ObjectStoreContents.open(nc, { retentionMs: 30 * DAY_MS, replicas: 1 });
    expect((await jsm.streams.info(`OBJ_${INBOUND_BUCKET}`)).config.max_age).toBe(30 * DAY_MS * 1_000_000);
    await ObjectStoreContents.open(nc, { retentionMs: 7 * DAY_MS, replicas: 1 });
    expect((await jsm.streams.info(`OBJ_${INBOUND_BUCKET}`)).config.max_age).toBe(7 * DAY_MS * 1_000_000);
  });
});
