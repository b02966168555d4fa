/**
 * The content store (DESIGN §9.1): compiled content written once by the unit that accepted
 * the message, before any job naming it is published, and read by delivery. A JetStream KV
 * bucket with the deployment's replica count; entries older than `maxAgeMs` are dropped by
 * the server, and owners delete what they know is final.
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { openKvBucket } from "../../kit/src/jetstream.js";
import { StoredContentSchema } from "../../../gen/mailroom/events/v1/events_pb.js";
import { CompiledMessageSchema, type CompiledMessage } from "../../../gen/mailroom/renderer/v1/renderer_pb.js";

export const CONTENT_BUCKET = "mailroom_content";
/** Default age past which the server drops an entry (a WARMUP broadcast rewrites its entry daily). */
export const CONTENT_MAX_AGE_MS = 14 * 24 * 3600_000;

const REF = /^(email|broadcast):([A-Za-z0-9_\-]+)$/;
const KEY_TOKEN = /^[A-Za-z0-9_\-]+$/;

/** `email:trs_1` of workspace `ws_a` → `ws_a.email.trs_1`: the workspace is part of the key, so tenants never share an entry. */
export function contentKey(workspaceId: string, contentRef: string): string {
  const m = REF.exec(contentRef);
  if (!m || !KEY_TOKEN.test(workspaceId)) throw new Error(`"${workspaceId}" / "${contentRef}" cannot name content`);
  return `${workspaceId}.${m[1]}.${m[2]}`;
}

export interface ContentStoreOptions {
  /** MAILROOM_NATS_REPLICAS. */
  replicas?: number;
  maxAgeMs?: number;
}

export class ContentStore {
  private constructor(private readonly kv: KV) {}

  static async open(nc: NatsConnection, opts: ContentStoreOptions = {}): Promise<ContentStore> {
    const kv = await openKvBucket(nc, CONTENT_BUCKET, { history: 1, ttl: opts.maxAgeMs ?? CONTENT_MAX_AGE_MS }, opts.replicas);
    return new ContentStore(kv);
  }

  /** Writes (or overwrites) the content; resolves once the server stored it. */
  async put(workspaceId: string, contentRef: string, compiled: CompiledMessage | Uint8Array): Promise<void> {
    const bytes = compiled instanceof Uint8Array ? compiled : toBinary(CompiledMessageSchema, compiled);
    // StoredContent { compiled = 1 }: the compiled message's bytes as field 1, without decoding them.
    await this.kv.put(contentKey(workspaceId, contentRef), storedContentBytes(bytes));
  }

  /** The content, or undefined when there is none (never written, deleted, or expired). */
  async get(workspaceId: string, contentRef: string): Promise<CompiledMessage | undefined> {
    const entry = await this.kv.get(contentKey(workspaceId, contentRef));
    if (!entry || entry.operation !== "PUT" || entry.value.length === 0) return undefined;
    return fromBinary(StoredContentSchema, entry.value).compiled;
  }

  async delete(workspaceId: string, contentRef: string): Promise<void> {
    await this.kv.delete(contentKey(workspaceId, contentRef));
  }
}

/** Protobuf framing of StoredContent around already-encoded CompiledMessage bytes (field 1, wire type 2). */
function storedContentBytes(compiled: Uint8Array): Uint8Array {
  const len: number[] = [];
  let n = compiled.length;
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    len.push(b);
  } while (n);
  const out = new Uint8Array(1 + len.length + compiled.length);
  out[0] = 0x0a;
  out.set(len, 1);
  out.set(compiled, 1 + len.length);
  return out;
}
