import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toBinary } from "@bufbuild/protobuf";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { pino } from "pino";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { connectNats, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { AUDIT_STORE_CONSUMER, AUDIT_STREAM, AuditPublisher, auditSubject, toAuditEntry, type AuditEntryInput } from "@mailroom/pipeline/audit.js";
import { AuditEntrySchema } from "@mailroom/proto/accounts/v1/team_pb.js";
import { startNats, type NatsHandle } from "../../../test/harness/nats.js";
import { auditBatchWriter, consumeAuditLog } from "./audit-consumer.js";
import { AuditLog, type AuditLogEntry, type AuditLogRepository } from "./domain/audit-log.js";
import { AuditLogStore } from "./adapters/audit-log-store.js";
import type { Stored } from "@mailroom/records/documents.js";
import { memoryDirectory, storeTeam } from "../../audience/src/testing.js";

const DAY = 86_400_000;

describe("audit log: the AUDIT stream into audit_log, listed with filters and paging", () => {
  let nats: NatsHandle;
  let nc: NatsConnection;
  let auditLog: AuditLog;
  let loop: ConsumeLoop;
  const base = Date.now() - 10 * DAY;
  const at = (minutes: number) => new Date(base + minutes * 60_000);

  const entries: AuditEntryInput[] = [
    { id: "aud_01", workspaceId: "ws_a", at: at(1), actor: { kind: "key", id: "key_1", label: "deploy" }, action: "contact.create", resource: { type: "contact", id: "ctc_1" }, requestId: "req-1", summary: { email: "a@x.test" } },
    { id: "aud_02", workspaceId: "ws_a", at: at(2), actor: { kind: "member", id: "mbr_1" }, action: "contact.update", resource: { type: "contact", id: "ctc_1" }, summary: { firstName: "Ann" } },
    { id: "aud_03", workspaceId: "ws_a", at: at(3), actor: { kind: "cli", id: "ops" }, action: "member.role_change", resource: { type: "member", id: "mbr_2" }, summary: { role: "ADMIN" } },
    // Same time as aud_03: the id orders them.
    { id: "aud_04", workspaceId: "ws_a", at: at(3), actor: { kind: "member", id: "mbr_1" }, action: "broadcast.schedule", resource: { type: "broadcast", id: "brd_1" } },
    { id: "aud_05", workspaceId: "ws_a", at: at(5), actor: { kind: "member", id: "mbr_1" }, action: "contact.delete", resource: { type: "contact", id: "ctc_2" } },
    { id: "aud_06", workspaceId: "ws_b", at: at(4), actor: { kind: "member", id: "mbr_1" }, action: "contact.create", resource: { type: "contact", id: "ctc_9" } },
  ];

  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats(nats.url, "directory-audit-test");
    await ensureMailStreams(nc, 1);
    const dir = await memoryDirectory();
    ({ auditLog } = await storeTeam(dir));
    loop = await consumeAuditLog(nc, auditLog, pino({ level: "silent" }));
    const publisher = new AuditPublisher(nc);
    for (const e of entries) await publisher.publish(e);
    await publisher.publish(entries[0]); // a retried publish: the stream keeps one (msgID = id)
    // Older than a year: the TTL index drops it.
    await publisher.publish({ id: "aud_00", workspaceId: "ws_a", at: new Date(Date.now() - 366 * DAY), actor: { kind: "system", id: "" }, action: "contact.create", resource: { type: "contact", id: "ctc_0" } });
    for (let i = 0; i < 200; i++) {
      if ((await auditLog.list({ workspaceId: "ws_a", limit: 500 })).entries.length >= 5 && (await auditLog.list({ workspaceId: "ws_b" })).entries.length >= 1) break;
      await new Promise((r) => setTimeout(r, 50));
    }
  }, 60_000);
  afterAll(async () => {
    await loop?.stop();
    await nc?.drain();
    await nats?.stop();
  });

  const ids = async (q: Omit<Parameters<AuditLog["list"]>[0], "workspaceId"> & { workspaceId?: string }) =>
    (await auditLog.list({ workspaceId: "ws_a", ...q })).entries.map((e) => e._id);

  it("stores each entry once with everything it carried", async () => {
    const stream = await (await jetstreamManager(nc)).streams.info(AUDIT_STREAM);
    expect(stream.config.subjects).toEqual(["audit.>"]);
    expect(stream.state.messages).toBe(7); // six entries, the old one; the retried publish deduplicated
    const page = await auditLog.list({ workspaceId: "ws_a" });
    expect(page.entries.map((e) => e._id)).toEqual(["aud_05", "aud_04", "aud_03", "aud_02", "aud_01"]);
    expect(page.nextPageToken).toBe("");
    expect(page.entries.at(-1)).toEqual({
      _id: "aud_01", workspaceId: "ws_a", at: at(1), actor: { kind: "key", id: "key_1", label: "deploy" }, action: "contact.create",
      resource: { type: "contact", id: "ctc_1" }, requestId: "req-1", summary: { email: "a@x.test" },
    });
    expect(await ids({ workspaceId: "ws_b" })).toEqual(["aud_06"]);
  });

  it("pages by (at, id) cursor, newest first, without gaps or repeats", async () => {
    const seen: string[] = [];
    let pageToken = "";
    let pages = 0;
    do {
      const page = await auditLog.list({ workspaceId: "ws_a", limit: 2, pageToken });
      seen.push(...page.entries.map((e) => e._id));
      pageToken = page.nextPageToken;
      pages++;
    } while (pageToken && pages < 10);
    expect(seen).toEqual(["aud_05", "aud_04", "aud_03", "aud_02", "aud_01"]);
    expect(pages).toBe(3);
    expect(errorInfoOf(await auditLog.list({ workspaceId: "ws_a", pageToken: "garbage" }).catch((e) => e))?.code).toBe("invalid_page_token");
    expect(errorInfoOf(await auditLog.list({ workspaceId: "ws_a", limit: 501 }).catch((e) => e))?.code).toBe("invalid_request");
  });

  it("filters by time, actor and resource", async () => {
    expect(await ids({ since: at(2), until: at(5) })).toEqual(["aud_04", "aud_03", "aud_02"]);
    expect(await ids({ actor: "member:mbr_1" })).toEqual(["aud_05", "aud_04", "aud_02"]);
    expect(await ids({ actor: "mbr_1", limit: 1 })).toEqual(["aud_05"]);
    expect(await ids({ actor: "key:key_1" })).toEqual(["aud_01"]);
    expect(await ids({ actor: "cli:ops" })).toEqual(["aud_03"]);
    expect(await ids({ actor: "key:mbr_1" })).toEqual([]);
    expect(await ids({ resource: "contact" })).toEqual(["aud_05", "aud_02", "aud_01"]);
    expect(await ids({ resource: "contact:ctc_1" })).toEqual(["aud_02", "aud_01"]);
    expect(await ids({ resource: "member:mbr_2", actor: "cli:ops", since: at(3) })).toEqual(["aud_03"]);
    expect(errorInfoOf(await auditLog.list({ workspaceId: "ws_a", actor: "robot:x" }).catch((e) => e))?.code).toBe("invalid_actor");
  });
});

describe("audit log: the consumer stores entries in batches, each once", () => {
  let nats: NatsHandle;
  let nc: NatsConnection;
  let loop: ConsumeLoop | undefined;
  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats(nats.url, "directory-audit-batch-test");
    await ensureMailStreams(nc, 1);
  }, 60_000);
  afterAll(async () => {
    await loop?.stop();
    await nc?.drain();
    await nats?.stop();
  });

  it("a backlog is written in far fewer writes than entries; a batch stored but not acked comes back and changes nothing", async () => {
    const dir = await memoryDirectory();
    const store = await AuditLogStore.open(dir.store);
    // The real store, with its writes counted and each taking 20 ms, as a disk commit may
    // (the in-memory store answers at once, and the batches would be as small as the socket
    // reads that deliver the messages). The first write of several entries is stored and then
    // fails, and so does each entry's single retry, as if the process lost its store before
    // acking: those entries are delivered again.
    const writes: number[] = [];
    let singleInserts = 0;
    let crashed = 0;
    let lost = new Set<string>();
    const counted: AuditLogRepository = {
      insert: async (entry) => {
        singleInserts++;
        if (lost.delete(entry._id)) throw new Error("store lost");
        return store.insert(entry);
      },
      insertMany: async (batch: AuditLogEntry[]) => {
        writes.push(batch.length);
        await new Promise((r) => setTimeout(r, 20));
        await store.insertMany(batch);
        if (!crashed && batch.length > 1) {
          crashed = batch.length;
          lost = new Set(batch.map((e) => e._id));
          throw new Error("stored, then the store was lost before the acks");
        }
      },
      find: (q) => store.find(q),
    };

    const total = 400;
    const at = new Date(Date.now() - 60_000);
    const entryInput = (i: number): AuditEntryInput => ({
      id: `aud_batch_${String(i).padStart(4, "0")}`, workspaceId: i % 2 ? "ws_odd" : "ws_even", at, actor: { kind: "key", id: "key_bench" },
      action: "email.send", resource: { type: "email", id: `em_${i}` }, requestId: `req-${i}`, summary: { to: "" },
    });
    const publisher = new AuditPublisher(nc);
    await Promise.all(Array.from({ length: total }, (_, i) => publisher.publish(entryInput(i))));
    // The same entry published again after the stream's duplicate window: a second message.
    const repeated = toAuditEntry(entryInput(7));
    await jetstream(nc).publish(auditSubject(repeated.workspaceId), toBinary(AuditEntrySchema, repeated), { msgID: `${repeated.id}-late` });

    loop = await consumeAuditLog(nc, new AuditLog(counted), pino({ level: "silent" }));
    const jsm = await jetstreamManager(nc);
    const settled = async () => {
      const info = await jsm.consumers.info(AUDIT_STREAM, AUDIT_STORE_CONSUMER);
      return info.num_pending === 0 && info.num_ack_pending === 0;
    };
    for (let i = 0; i < 300 && !(await settled()); i++) await new Promise((r) => setTimeout(r, 100));
    expect(await settled()).toBe(true);

    expect(crashed).toBeGreaterThan(1);
    const delivered = total + 1 + crashed; // every message once, the failed batch's twice
    // Batches, not one write per message (which `delivered` writes would be).
    expect(writes.reduce((a, b) => a + b, 0)).toBe(delivered);
    expect(writes.length).toBeLessThan(delivered / 20);
    expect(Math.max(...writes)).toBeGreaterThan(100);
    expect(singleInserts).toBe(crashed); // only the failed batch's entries, each tried alone once

    // Each entry exactly once, as published.
    const docs = await dir.store.collection<Stored<AuditLogEntry>>("audit_log").find({}, { sort: { _id: 1 } });
    expect(docs.map((d) => d._id)).toEqual(Array.from({ length: total }, (_, i) => entryInput(i).id));
    expect(docs[7]).toEqual({
      _id: "aud_batch_0007", workspaceId: "ws_odd", at, actor: { kind: "key", id: "key_bench", label: "" },
      action: "email.send", resource: { type: "email", id: "em_7" }, requestId: "req-7", summary: { to: "" },
    });
  }, 60_000);
});

describe("audit batch writer", () => {
  const entry = (id: string): AuditLogEntry => ({
    _id: id, workspaceId: "ws_1", at: new Date(), actor: { kind: "key", id: "key_1", label: "" }, action: "contact.update",
    resource: { type: "contact", id: "ctc_1" }, requestId: "", summary: {},
  });

  it("writes entries handed over together as one batch, and one the store refuses fails alone", async () => {
    const writes: string[][] = [];
    const stored: string[] = [];
    const refuses = (id: string) => id === "aud_bad";
    const writer = auditBatchWriter(new AuditLog({
      insert: async (e) => {
        if (refuses(e._id)) throw new Error("refused");
        stored.push(e._id);
      },
      insertMany: async (batch) => {
        writes.push(batch.map((e) => e._id));
        if (batch.some((e) => refuses(e._id))) throw new Error("refused");
        stored.push(...batch.map((e) => e._id));
      },
      find: async () => [],
    }));
    const results = await Promise.allSettled(["aud_1", "aud_2", "aud_bad", "aud_3"].map((id) => writer.store(entry(id))));
    expect(writes).toEqual([["aud_1", "aud_2", "aud_bad", "aud_3"]]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect(stored.sort()).toEqual(["aud_1", "aud_2", "aud_3"]);
  });
});
