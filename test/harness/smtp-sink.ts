import { SMTPServer, type SMTPServerSession } from "smtp-server";
import type { AddressInfo } from "node:net";

export interface ReceivedMessage {
  from: string;
  to: string[];
  raw: string;
  receivedAt: Date;
}

/**
 * What the sink answers for one message: accept (250), a temporary (4xx) or permanent
 * (5xx) rejection, or a dropped connection mid-DATA.
 */
export type SinkBehaviour =
  | { kind: "accept"; /** Hold the 250 reply this long (a slow relay: the message is recorded first). */ delayMs?: number }
  | { kind: "reject"; code: number; message?: string }
  | { kind: "drop" };

export interface SmtpSink {
  port: number;
  url: string;
  messages: ReceivedMessage[];
  /** Number of DATA transactions attempted, including rejected and dropped ones. */
  attempts: number;
  setBehaviour(fn: (raw: string, attempt: number) => SinkBehaviour): void;
  /** Fault mode: answer RCPT TO with this code (e.g. 550 for chosen recipients, 450 for a while); undefined accepts. */
  setRecipientFault(fn: ((recipient: string) => { code: number; message?: string } | undefined) | undefined): void;
  /** Fault mode: cut the connection after the first chunk of DATA (the message half sent) when fn says so. */
  setMidDataCut(fn: (() => boolean) | undefined): void;
  /** DATA transactions cut mid-stream by setMidDataCut. */
  readonly cuts: number;
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  /** Forgets what arrived and every fault mode (a shared system's sink, handed to its next suite). */
  reset(): void;
  stop(): Promise<void>;
}

/** A real SMTP server on loopback that records what arrives. */
export async function startSmtpSink(opts: { /** Listen on this port (default: a free one). */ port?: number } = {}): Promise<SmtpSink> {
  const messages: ReceivedMessage[] = [];
  let behaviour: (raw: string, attempt: number) => SinkBehaviour = () => ({ kind: "accept" });
  let attempts = 0;
  let cuts = 0;
  let recipientFault: ((recipient: string) => { code: number; message?: string } | undefined) | undefined;
  let midDataCut: (() => boolean) | undefined;
  const waiters: Array<() => void> = [];

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    size: 50 * 1024 * 1024,
    onRcptTo(address, _session, callback) {
      const fault = recipientFault?.(address.address);
      if (!fault) return callback();
      callback(Object.assign(new Error(fault.message ?? `recipient refused with ${fault.code}`), { responseCode: fault.code }));
    },
    onData(stream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      let cut = false;
      stream.on("data", (c: Buffer) => {
        if (!chunks.length && !cut && midDataCut?.()) {
          cut = true;
          cuts += 1;
          cutConnection(session.id);
        }
        chunks.push(c);
      });
      stream.on("end", () => {
        if (cut) return;
        attempts += 1;
        const raw = Buffer.concat(chunks).toString("utf8");
        const b = behaviour(raw, attempts);
        if (b.kind === "drop") {
          cutConnection(session.id);
          return;
        }
        if (b.kind === "reject") {
          callback(Object.assign(new Error(b.message ?? `rejected with ${b.code}`), { responseCode: b.code }));
          return;
        }
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          receivedAt: new Date(),
        });
        waiters.splice(0).forEach((w) => w());
        if (b.delayMs) setTimeout(() => callback(), b.delayMs);
        else callback();
      });
    },
  });
  // The session has no socket; find its connection and cut it before replying.
  function cutConnection(sessionId: string) {
    const connections = (server as unknown as { connections: Set<{ id: string; _socket: { destroy(): void } }> }).connections;
    for (const c of connections) if (c.id === sessionId) c._socket.destroy();
  }
  server.on("error", () => undefined);
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;

  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    messages,
    get attempts() { return attempts; },
    get cuts() { return cuts; },
    setBehaviour(fn) { behaviour = fn; },
    setRecipientFault(fn) { recipientFault = fn; },
    setMidDataCut(fn) { midDataCut = fn; },
    async waitFor(count, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`expected ${count} messages, got ${messages.length} after ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.min(left, 200));
          waiters.push(() => { clearTimeout(t); resolve(); });
        });
      }
      return messages.slice(0, count);
    },
    reset() {
      messages.length = 0;
      attempts = 0;
      cuts = 0;
      behaviour = () => ({ kind: "accept" });
      recipientFault = undefined;
      midDataCut = undefined;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
