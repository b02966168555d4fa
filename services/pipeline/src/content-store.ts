/**
 * The content store (DESIGN §9.1): compiled content written once by the unit that accepted
 * the message, before any job naming it is published, and read by delivery. A JetStream KV
 * bucket with the deployment's replica count; entries older than `maxAgeMs` are dropped by
 * the server, and owners delete what they know is final.
 */
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { openKvBucket } from "@mailroom/kit/jetstream.js";
import { StoredContentSchema, type StoredContent } from "@mailroom/proto/events/v1/events_pb.js";
import { CompiledMessageSchema, type CompiledMessage } from "@mailroom/proto/renderer/v1/renderer_pb.js";

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

/**
 * What a transactional email carries beside its compiled bodies (DESIGN §9.5): the Cc header
 * as given, custom headers in order, attachments with their bytes. Stored with the content,
 * never in a job.
 */
export type ContentExtras = Pick<MessageInitShape<typeof StoredContentSchema>, "cc" | "headers" | "attachments"> & {
  /** A forwarded message (DESIGN §10.4): StoredContent's raw_mime and envelope_from. */
  forwarded?: { raw: Uint8Array; envelopeFrom: string };
};

export interface ContentStoreOptions {
  /** MAILROOM_NATS_REPLICAS. */
  replicas?: number;
  maxAgeMs?: number;
  /** Content up to this size rides in its job instead (place()); 0 stores everything. */
  inlineBytes?: number;
}

/**
 * Default largest content a job carries itself: a transactional email's compiled bodies are a
 * few KB. Carried, it costs no write to the content store at acceptance and no read at
 * delivery (a request and its answer each); larger content (attachments) keeps the store.
 */
export const INLINE_CONTENT_BYTES = 64 * 1024;

/**
 * Content larger than one NATS message (a 5 MB HTML email compiles to more than the server's
 * 1 MB max_payload) is stored in parts: `<key>.part.<i>` hold consecutive slices of the
 * StoredContent bytes, written first, and `<key>` holds a small manifest written last, so a
 * reader never sees a manifest whose parts are missing. A manifest starts with a byte
 * StoredContent never starts with (its first byte is field 1's tag, 0x0a).
 */
const MANIFEST_MAGIC = 0x4d; // "M"
const partKey = (key: string, i: number) => `${key}.part.${i}`;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface Manifest {
  parts: number;
  size: number;
}

function manifestBytes(m: Manifest): Uint8Array {
  const json = encoder.encode(JSON.stringify(m));
  const out = new Uint8Array(1 + json.length);
  out[0] = MANIFEST_MAGIC;
  out.set(json, 1);
  return out;
}

function manifestOf(value: Uint8Array): Manifest | undefined {
  if (value[0] !== MANIFEST_MAGIC) return undefined;
  return JSON.parse(decoder.decode(value.subarray(1))) as Manifest;
}

/** Headroom under max_payload for the KV's headers and the publish's framing. */
const PART_HEADROOM = 16 * 1024;

export class ContentStore {
  private constructor(
    private readonly kv: KV,
    /** Largest value stored as one entry. */
    private readonly partBytes: number,
    private readonly inlineBytes: number,
  ) {}

  static async open(nc: NatsConnection, opts: ContentStoreOptions = {}): Promise<ContentStore> {
    const kv = await openKvBucket(nc, CONTENT_BUCKET, { history: 1, ttl: opts.maxAgeMs ?? CONTENT_MAX_AGE_MS }, opts.replicas);
    const maxPayload = nc.info?.max_payload ?? 1024 * 1024;
    const partBytes = Math.max(64 * 1024, maxPayload - PART_HEADROOM);
    return new ContentStore(kv, partBytes, Math.min(opts.inlineBytes ?? INLINE_CONTENT_BYTES, partBytes / 4));
  }

  /**
   * Puts the content where its job will find it: small content is returned, for the job to
   * carry (DeliveryJob.content), and nothing is written; larger content is written (put())
   * and undefined returned.
   */
  async place(workspaceId: string, contentRef: string, compiled: CompiledMessage | Uint8Array, extras?: ContentExtras): Promise<Uint8Array | undefined> {
    const stored = encodeStoredContent(compiled, extras);
    if (stored.length <= this.inlineBytes) return stored;
    await this.putStored(contentKey(workspaceId, contentRef), stored);
    return undefined;
  }

  /**
   * Writes (or overwrites) the content, with what the email carries beside it (`extras`:
   * Cc, headers, attachments — 10 MB of attachments become about ten parts, below);
   * resolves once the server stored it.
   */
  async put(workspaceId: string, contentRef: string, compiled: CompiledMessage | Uint8Array, extras?: ContentExtras): Promise<void> {
    await this.putStored(contentKey(workspaceId, contentRef), encodeStoredContent(compiled, extras));
  }

  private async putStored(key: string, stored: Uint8Array): Promise<void> {
    if (stored.length <= this.partBytes) {
      await this.kv.put(key, stored);
      return;
    }
    const parts = Math.ceil(stored.length / this.partBytes);
    await Promise.all(
      Array.from({ length: parts }, (_, i) => this.kv.put(partKey(key, i), stored.subarray(i * this.partBytes, (i + 1) * this.partBytes))),
    );
    await this.kv.put(key, manifestBytes({ parts, size: stored.length }));
  }

  /** The compiled content, or undefined when there is none (never written, deleted, or expired). */
  async get(workspaceId: string, contentRef: string): Promise<CompiledMessage | undefined> {
    return (await this.getStored(workspaceId, contentRef))?.compiled;
  }

  /** The whole stored content (compiled message, Cc, headers, attachments), or undefined when there is none. */
  async getStored(workspaceId: string, contentRef: string): Promise<StoredContent | undefined> {
    const key = contentKey(workspaceId, contentRef);
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== "PUT" || entry.value.length === 0) return undefined;
    const manifest = manifestOf(entry.value);
    if (!manifest) return fromBinary(StoredContentSchema, entry.value);
    const parts = await Promise.all(Array.from({ length: manifest.parts }, (_, i) => this.kv.get(partKey(key, i))));
    const whole = new Uint8Array(manifest.size);
    let offset = 0;
    for (const part of parts) {
      if (!part || part.operation !== "PUT") return undefined; // expired or deleted meanwhile
      whole.set(part.value, offset);
      offset += part.value.length;
    }
    if (offset !== manifest.size) return undefined;
    return fromBinary(StoredContentSchema, whole);
  }

  async delete(workspaceId: string, contentRef: string): Promise<void> {
    const key = contentKey(workspaceId, contentRef);
    const entry = await this.kv.get(key);
    const manifest = entry && entry.operation === "PUT" ? manifestOf(entry.value) : undefined;
    await this.kv.delete(key);
    if (manifest) await Promise.all(Array.from({ length: manifest.parts }, (_, i) => this.kv.delete(partKey(key, i))));
  }
}

/**
 * Protobuf framing of StoredContent around already-encoded CompiledMessage bytes (field 1,
 * wire type 2), followed by the encoded other fields (`rest`, a StoredContent without field 1).
 */
/** The StoredContent bytes of compiled content and what the email carries beside it. */
export function encodeStoredContent(compiled: CompiledMessage | Uint8Array, extras?: ContentExtras): Uint8Array {
  const bytes = compiled instanceof Uint8Array ? compiled : toBinary(CompiledMessageSchema, compiled);
  // StoredContent { compiled = 1 }: the compiled message's bytes as field 1, without decoding them;
  // the other fields follow as their own encoding (concatenated protobuf messages merge).
  if (!extras) return storedContentBytes(bytes);
  const { forwarded, ...rest } = extras;
  const fields = forwarded ? { ...rest, rawMime: forwarded.raw, envelopeFrom: forwarded.envelopeFrom } : rest;
  return storedContentBytes(bytes, toBinary(StoredContentSchema, create(StoredContentSchema, fields)));
}

/** StoredContent from its bytes (a job's inline content). */
export function decodeStoredContent(bytes: Uint8Array): StoredContent {
  return fromBinary(StoredContentSchema, bytes);
}

function storedContentBytes(compiled: Uint8Array, rest?: Uint8Array): Uint8Array {
  const len: number[] = [];
  let n = compiled.length;
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    len.push(b);
  } while (n);
  const head = 1 + len.length + compiled.length;
  const out = new Uint8Array(head + (rest?.length ?? 0));
  out[0] = 0x0a;
  out.set(len, 1);
  out.set(compiled, 1 + len.length);
  if (rest) out.set(rest, head);
  return out;
}
