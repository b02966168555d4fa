import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

/**
 * A relay on loopback that requires AUTH (PLAIN/LOGIN over plain text, allowed on loopback) with
 * one user and password, and keeps what it receives: a route URL with credentials in it.
 */
export async function startAuthSink(user: string, password: string) {
  const messages: { raw: string }[] = [];
  const waiters: Array<() => void> = [];
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === user && auth.password === password) return callback(null, { user });
      callback(Object.assign(new Error("bad credentials"), { responseCode: 535 }));
    },
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        messages.push({ raw: Buffer.concat(chunks).toString("utf8") });
        waiters.splice(0).forEach((w) => w());
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    port,
    url: `smtp://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}`,
    messages,
    async waitFor(count: number, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} messages, got ${messages.length} after ${timeoutMs} ms`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200);
        });
      }
      return messages;
    },
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}
