import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { SMTPServer } from "smtp-server";
import { ConnectionBudget, PoolWaitTimeout, SmtpPool } from "./smtp-pool.js";

/** A real SMTP server counting connections open at once; DATA answered after `delayMs`. */
async function server(delayMs = 0) {
  let open = 0;
  let max = 0;
  let received = 0;
  const s = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onConnect(_session, cb) {
      open += 1;
      max = Math.max(max, open);
      cb();
    },
    onClose() {
      open -= 1;
    },
    onData(stream, _session, cb) {
      stream.resume();
      stream.on("end", () => setTimeout(() => ((received += 1), cb()), delayMs));
    },
  });
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  servers.push(s);
  const port = (s.server.address() as AddressInfo).port;
  return { port, get open() { return open; }, get max() { return max; }, get received() { return received; } };
}

const servers: SMTPServer[] = [];
const pools: SmtpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
});

function pool(port: number, opts: Partial<ConstructorParameters<typeof SmtpPool>[1]> = {}) {
  const p = new SmtpPool(
    { host: "127.0.0.1", port, secure: false, timeoutMs: 5_000, tlsRejectUnauthorized: true, requireTls: false, ignoreTls: false },
    { poolSize: 5, maxMessagesPerConnection: 100, ...opts },
  );
  pools.push(p);
  return p;
}

const raw = Buffer.from("Subject: hi\r\n\r\nHello\r\n");

describe("SmtpPool", () => {
  it("shares a connection budget between pools: one closes an idle connection for another", async () => {
    const a = await server();
    const b = await server();
    const budget = new ConnectionBudget(1);
    const toA = pool(a.port, { budget });
    const toB = pool(b.port, { budget });
    await toA.send("x@example.test", ["ann@example.test"], raw);
    expect(budget.inUse).toBe(1);
    // A's connection is idle: B takes its slot.
    await toB.send("x@example.test", ["bob@example.test"], raw);
    expect(a.received + b.received).toBe(2);
    expect(budget.inUse).toBe(1);
    expect(toA.size).toBe(0);
  });

  it("never opens more than the budget across pools; sends wait for a connection", async () => {
    const a = await server(50);
    const budget = new ConnectionBudget(2);
    const p = pool(a.port, { budget, poolSize: 10 });
    await Promise.all(Array.from({ length: 8 }, (_, i) => p.send("x@example.test", [`r${i}@example.test`], raw)));
    expect(a.received).toBe(8);
    expect(a.max).toBe(2);
  });

  it("a send that finds no connection within acquireTimeoutMs fails before anything was sent", async () => {
    const a = await server(600);
    const p = pool(a.port, { poolSize: 1, acquireTimeoutMs: 300 });
    await p.send("x@example.test", ["warm@example.test"], raw); // the one connection is open and idle
    const first = p.send("x@example.test", ["a@example.test"], raw);
    const second = await p.send("x@example.test", ["b@example.test"], raw).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(PoolWaitTimeout);
    expect(second).toMatchObject({ code: 0, beforeData: true, aboutRecipient: false });
    await first;
    expect(a.received).toBe(2);
  });

  it("closes an idle connection after idleTimeoutMs", async () => {
    const a = await server();
    const p = pool(a.port, { idleTimeoutMs: 100 });
    await p.send("x@example.test", ["a@example.test"], raw);
    expect(p.size).toBe(1);
    const deadline = Date.now() + 5_000;
    while (p.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(p.size).toBe(0);
    expect(p.unused).toBe(true);
  });
});
