/**
 * A relay for the route suites: a real SMTP server on loopback that records each message by
 * its Message-ID, holds its 250 a little (so transactions are in flight when it is cut), and
 * can be cut like a crashed relay: the listener closed (new connections refused) and every
 * open connection destroyed at once (smtp-server's own close lets them finish for 30 s).
 */
import type { AddressInfo, Socket } from "node:net";
import { SMTPServer } from "smtp-server";

export interface RelaySink {
  url: string;
  /** Message-IDs received (DATA complete), in order, one entry per copy. */
  received: string[];
  /** Messages whose body arrived but whose 250 had not gone out, when cut. */
  inFlightAtCut: number;
  /** Destroys every connection and stops listening. */
  cut(): Promise<void>;
  stop(): Promise<void>;
}

export async function startRelaySink(opts: { holdMs?: number } = {}): Promise<RelaySink> {
  const received: string[] = [];
  const sockets = new Set<Socket>();
  let unanswered = 0;
  let cutDone = false;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        const id = /^Message-ID:\s*<?([^>\r\n]+)>?/im.exec(raw)?.[1] ?? "";
        received.push(id);
        unanswered += 1;
        setTimeout(() => {
          unanswered -= 1;
          callback();
        }, opts.holdMs ?? 0);
      });
    },
  });
  server.on("error", () => undefined);
  server.server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;
  const sink: RelaySink = {
    url: `smtp://127.0.0.1:${port}`,
    received,
    inFlightAtCut: 0,
    async cut() {
      if (cutDone) return;
      cutDone = true;
      sink.inFlightAtCut = unanswered;
      const closed = new Promise<void>((resolve) => server.server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
    async stop() {
      if (cutDone) return;
      await sink.cut();
    },
  };
  return sink;
}
