import type { NatsConnection } from "@nats-io/transport-node";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ack, consumeProto, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { Coalescer } from "@mailroom/kit/coalesce.js";
import type { Logger } from "@mailroom/kit/logger.js";
import { AUDIT_STORE_CONSUMER, AUDIT_STREAM, AUDIT_SUBJECTS } from "@mailroom/pipeline/audit.js";
import { AuditEntrySchema, type AuditEntry } from "@mailroom/proto/accounts/v1/team_pb.js";
import type { AuditLog, AuditLogEntry } from "./domain/audit-log.js";

/** An AuditEntry as stored; undefined when it cannot be (no id, workspace or time). */
export function auditLogEntryOf(e: AuditEntry): AuditLogEntry | undefined {
  if (!e.id || !e.workspaceId || !e.at) return undefined;
  return {
    _id: e.id,
    workspaceId: e.workspaceId,
    at: timestampDate(e.at),
    actor: { kind: e.actor?.kind ?? "system", id: e.actor?.id ?? "", label: e.actor?.label ?? "" },
    action: e.action,
    resource: { type: e.resource?.type ?? "", id: e.resource?.id ?? "" },
    requestId: e.requestId,
    summary: { ...e.summary },
  };
}

/**
 * Entries handled at once, and so the largest batch one write stores. Every API send is
 * audited, so under load this consumer sees the API's request rate: in batches, a
 * message costs a share of one store write, and the consume loop refills many freed slots
 * with one pull (each pull is a subscription and a request on the server) instead of one
 * pull per message.
 */
export const AUDIT_CONSUMER_CONCURRENCY = 256;

/**
 * Stores entries in batches: `store(entry)` resolves once the write holding the entry is
 * done. The first entry of a quiet moment is written at once; those arriving while a write
 * runs go together in the next (kit's Coalescer). When a batch write fails, its entries are
 * written one by one, so an entry the store refuses fails alone and the rest are stored (a
 * store that is down fails each of them, and each is delivered again).
 */
export function auditBatchWriter(auditLog: AuditLog, maxBatch = AUDIT_CONSUMER_CONCURRENCY): { store(entry: AuditLogEntry): Promise<void> } {
  const batches = new Coalescer<AuditLogEntry, unknown>(async (_key, entries) => {
    try {
      await auditLog.recordMany(entries);
      return entries.map(() => undefined);
    } catch (err) {
      if (entries.length === 1) return [err];
      return Promise.all(entries.map((entry) => auditLog.record(entry).then(() => undefined, (one: unknown) => one ?? err)));
    }
  }, maxBatch);
  return {
    async store(entry) {
      const failure = await batches.run("", entry);
      if (failure !== undefined) throw failure;
    },
  };
}

/**
 * The AUDIT stream into the audit_log collection: one durable shared by every accounts
 * process; an entry is stored once by its id, so a redelivery changes nothing.
 *
 * Entries are stored in batches (auditBatchWriter), each acked only once the write holding it
 * is done; an entry whose write failed is delivered again.
 */
export function consumeAuditLog(
  nc: NatsConnection,
  auditLog: AuditLog,
  logger: Logger,
  opts: { concurrency?: number } = {},
): Promise<ConsumeLoop> {
  const concurrency = opts.concurrency ?? AUDIT_CONSUMER_CONCURRENCY;
  const writer = auditBatchWriter(auditLog, concurrency);
  return consumeProto(
    nc,
    { stream: AUDIT_STREAM, durable: AUDIT_STORE_CONSUMER, filterSubjects: [AUDIT_SUBJECTS], maxDeliver: 20, ackWaitMs: 30_000 },
    AuditEntrySchema,
    async (entry) => {
      const stored = auditLogEntryOf(entry);
      if (!stored) {
        logger.warn({ id: entry.id, workspaceId: entry.workspaceId }, "audit entry without id, workspace or time: dropped");
        return ack();
      }
      await writer.store(stored);
      return ack();
    },
    { logger, concurrency },
  );
}
