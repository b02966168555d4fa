/**
 * The AUDIT stream (DESIGN §9.9): every unit publishes one AuditEntry per state change on
 * "audit.<workspace_id>" (message id = the entry's id, so a retried publish is stored once);
 * the accounts unit consumes the stream into its audit_log collection, kept 365 days. The
 * stream itself is only the hand-over and keeps entries 7 days (long enough for an accounts
 * outage).
 *
 *   AUDIT (kept 7 days)   audit.<workspace_id>   AuditEntry (mailroom.accounts.v1, team.proto)
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { RetentionPolicy, StorageType, jetstream, jetstreamManager, type JetStreamClient, type StreamConfig } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { AuditEntrySchema, type AuditEntry } from "@mailroom/proto/accounts/v1/team_pb.js";
import { loadConfig } from "@mailroom/kit/config.js";
import { newId } from "@mailroom/kit/ids.js";
import { ensureStream, publishProto, retryOnTimeout } from "@mailroom/kit/jetstream.js";
import type { Logger } from "@mailroom/kit/logger.js";

export const AUDIT_STREAM = "AUDIT";
export const AUDIT_SUBJECTS = "audit.>";
/**
 * The accounts unit's durable consumer that stores the log. Its name is from before the
 * directory was split (accounts, audience) and stays: the durable and its position exist.
 */
export const AUDIT_STORE_CONSUMER = "directory-audit-log";

const SECOND_NS = 1_000_000_000;

export const AUDIT_STREAM_CONFIG: Partial<StreamConfig> & { name: string } = {
  name: AUDIT_STREAM,
  subjects: [AUDIT_SUBJECTS],
  retention: RetentionPolicy.Limits,
  storage: StorageType.File,
  max_age: 7 * 24 * 3600 * SECOND_NS,
  duplicate_window: 2 * 60 * SECOND_NS,
};

/** The subject of a workspace's entries. */
export function auditSubject(workspaceId: string): string {
  if (!/^[^.*>\s]+$/.test(workspaceId)) throw new Error(`"${workspaceId}" cannot be a subject token`);
  return `audit.${workspaceId}`;
}

/** Creates (or updates) the AUDIT stream with `replicas` copies (MAILROOM_NATS_REPLICAS). */
export async function ensureAuditStream(nc: NatsConnection, replicas = loadConfig().natsReplicas): Promise<void> {
  const jsm = await jetstreamManager(nc);
  await retryOnTimeout(() => ensureStream(jsm, { ...AUDIT_STREAM_CONFIG, num_replicas: replicas }));
}

/** One change as a unit describes it (structurally kit's AuditRecord, with optional id/label). */
export interface AuditEntryInput {
  /** "aud_…"; generated when absent. */
  id?: string;
  workspaceId: string;
  at: Date;
  actor: { kind: "key" | "member" | "cli" | "system"; id: string; label?: string };
  action: string;
  resource: { type: string; id: string };
  requestId?: string;
  /** Field -> non-secret value. */
  summary?: Record<string, string>;
}

export function toAuditEntry(input: AuditEntryInput): AuditEntry {
  return create(AuditEntrySchema, {
    id: input.id || newId("aud"),
    workspaceId: input.workspaceId,
    at: timestampFromDate(input.at),
    actor: { kind: input.actor.kind, id: input.actor.id, label: input.actor.label ?? "" },
    action: input.action,
    resource: { type: input.resource.type, id: input.resource.id },
    requestId: input.requestId ?? "",
    summary: { ...(input.summary ?? {}) },
  });
}

/**
 * Publishes audit entries on AUDIT. `publish` waits for the stream's ack and throws on
 * failure; `record` (kit's AuditSink shape) never throws: a failure is logged.
 */
export class AuditPublisher {
  private readonly js: Promise<JetStreamClient>;

  constructor(connection: NatsConnection | Promise<NatsConnection>, private readonly logger?: Logger) {
    this.js = Promise.resolve(connection).then((nc) => jetstream(nc));
  }

  async publish(input: AuditEntryInput): Promise<AuditEntry> {
    const entry = toAuditEntry(input);
    await publishProto(await this.js, auditSubject(entry.workspaceId), AuditEntrySchema, entry, entry.id);
    return entry;
  }

  async record(input: AuditEntryInput): Promise<void> {
    try {
      await this.publish(input);
    } catch (err) {
      this.logger?.warn({ err, workspaceId: input.workspaceId, action: input.action }, "audit entry not published");
    }
  }
}
