import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ReceivedAttachment } from "@mailroom/proto/inbound/v1/inbound_pb.js";

/** A chunk of a streamed attachment or raw message (GetReceivedAttachment, GetReceivedRaw): the first names what it is. */
type ReceivedContentChunk = { info?: ReceivedAttachment; data: Uint8Array };
import { rpcOptions, type RequestCallOptions } from "./deps.js";

/**
 * A received attachment or raw message, streamed from the inbound unit's server-streaming RPC
 * to the HTTP response (the API's routes and the console's downloads): nothing is held whole
 * in memory, a slow client slows the RPC down (the stream is pulled as the socket drains), and
 * a client that goes away cancels it.
 *
 * What the sender chose never renders on our origin: always a download
 * (`Content-Disposition: attachment`), `nosniff`, and a sandboxing CSP should a browser
 * display it anyway.
 */

/** How long a download may take (a 35 MB message to a slow client), instead of the RPCs' 30 s. */
export const DOWNLOAD_TIMEOUT_MS = 10 * 60_000;

/** A media type without parameters (`image/png`); anything else is sent as opaque bytes. */
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

export function safeContentType(contentType: string | undefined): string {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  return MEDIA_TYPE.test(type) ? type : "application/octet-stream";
}

export interface ContentFallback {
  filename: string;
  contentType: string;
  /** Send these whatever the first chunk says (the raw message is always message/rfc822). */
  fixed?: boolean;
}

/**
 * Opens the stream, waits for its first bytes (a refusal, a missing file or an outage is still
 * a JSON error then, before any header is sent), and sends the rest as it comes. `missing` is
 * thrown for a stream that ends without any chunk.
 */
export async function sendReceivedContent(
  request: FastifyRequest,
  reply: FastifyReply,
  open: (options: RequestCallOptions) => AsyncIterable<ReceivedContentChunk>,
  fallback: ContentFallback,
  missing: () => Error,
): Promise<FastifyReply> {
  const abort = new AbortController();
  const chunks = open({ ...rpcOptions(request), timeoutMs: DOWNLOAD_TIMEOUT_MS, signal: abort.signal })[Symbol.asyncIterator]();
  let info: ReceivedAttachment | undefined;
  let first: Uint8Array = new Uint8Array();
  try {
    // Up to the first bytes (the first chunk carries the metadata, maybe no data): until then
    // any failure is still an answer of its own.
    for (let received = false; ;) {
      const next = await chunks.next();
      if (next.done) {
        if (!received) throw missing();
        break;
      }
      if (!received) info = next.value.info;
      received = true;
      first = next.value.data;
      if (first.byteLength) break;
    }
  } catch (err) {
    abort.abort();
    throw err;
  }
  const size = info ? Number(info.size) : undefined;
  // The client went away (or the answer ended): the RPC stops too.
  reply.raw.once("close", () => abort.abort());
  const named = fallback.fixed ? undefined : info;
  reply
    .type(safeContentType(named?.contentType || fallback.contentType))
    .header("content-disposition", contentDisposition(named?.filename || fallback.filename))
    .header("x-content-type-options", "nosniff")
    .header("content-security-policy", "default-src 'none'; sandbox")
    .header("cache-control", "private, no-store");
  if (size !== undefined && Number.isSafeInteger(size)) reply.header("content-length", size);
  // A failure once the answer has begun can only cut it short: what was written is flushed and
  // the connection closed, without the end of the body (the client sees it incomplete, never a
  // whole-looking one); the error is logged here.
  const cutShort = async (err: unknown) => {
    request.log.warn({ err }, "received content stream ended early");
    const socket = reply.raw.socket;
    if (!socket || socket.destroyed || typeof socket.end !== "function") return void reply.raw.destroy();
    await new Promise<void>((resolve) => {
      socket.once("close", () => resolve());
      setTimeout(() => socket.destroy(), 5_000).unref();
      socket.end();
    });
  };
  return reply.send(Readable.from(bytes(first, chunks, size, cutShort), { objectMode: false }));
}

/**
 * The chunks' bytes. A stream that fails, or gives more or fewer bytes than its first chunk
 * announced, cuts the answer short: Content-Length was sent, and a client must never take a cut
 * file for a whole one.
 */
async function* bytes(first: Uint8Array, rest: AsyncIterator<ReceivedContentChunk>, expected: number | undefined, cutShort: (err: unknown) => Promise<void>): AsyncGenerator<Buffer> {
  let total = 0;
  const take = (data: Uint8Array) => {
    total += data.byteLength;
    if (expected !== undefined && total > expected) throw new Error(`the stream gave more than the ${expected} bytes it announced`);
    return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  };
  try {
    if (first.byteLength) yield take(first);
    for (;;) {
      const next = await rest.next();
      if (next.done) break;
      if (next.value.data.byteLength) yield take(next.value.data);
    }
    if (expected !== undefined && total !== expected) throw new Error(`the stream ended after ${total} of the ${expected} bytes it announced`);
  } catch (err) {
    await cutShort(err);
  } finally {
    await rest.return?.();
  }
}

/**
 * A filename for Content-Disposition: an ASCII fallback (quotes, backslashes and controls
 * replaced) and the exact name in RFC 5987 form, which browsers prefer.
 */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, "_") || "attachment";
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}
