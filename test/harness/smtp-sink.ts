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
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  stop(): Promise<void>;
}

/** A real SMTP server on loopback that records what arrives. */
export async function startSmtpSink(opts: { /** Listen on this port (default: a free one). */ port?: number } = {}): Promise<SmtpSink> {
  const messages: ReceivedMessage[] = [];
  let behaviour: (raw: string, attempt: number) => SinkBehaviour = () => ({ kind: "accept" });
  let attempts = 0;
  const waiters: Array<() => void> = [];

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    size: 50 * 1024 * 1024,
    onData(stream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        attempts += 1;
        const raw = Buffer.concat(chunks).toString("utf8");
        const b = behaviour(raw, attempts);
        if (b.kind === "drop") {
          // The session has no socket; find its connection and cut it before replying.
          const connections = (server as unknown as { connections: Set<{ id: string; _socket: { destroy(): void } }> }).connections;
          for (const c of connections) if (c.id === session.id) c._socket.destroy();
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
  server.on("error", () => undefined);
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;

  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    messages,
    get attempts() { return attempts; },
    setBehaviour(fn) { behaviour = fn; },
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
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
