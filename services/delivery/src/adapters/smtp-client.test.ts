import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import { SmtpFailure } from "../domain/ports.js";
import { buildMime } from "./mime.js";
import { dotStuff, parseSmtpUrl } from "./smtp-client.js";
import { SmtpPool } from "./smtp-pool.js";
import { SmtpPoolTransport } from "./smtp-transport.js";
import type { OutgoingMail } from "../domain/ports.js";

let serial = 0;
function outgoingMail(over: Partial<Pick<OutgoingMail, "to" | "text" | "html">> = {}): OutgoingMail {
  const to = over.to ?? "ann@example.test";
  serial += 1;
  return {
    lane: "transactional",
    envelope: { from: "bounces+x@bounces.example.test", to },
    from: { name: "Acme", address: "team@example.test" },
    to,
    subject: "Hello",
    html: over.html ?? "<p>Hello</p>",
    text: over.text ?? "Hello",
    messageId: `<m${serial}@example.test>`,
    headers: [],
    meta: { deliveryId: `d${serial}`, workspaceId: "ws_test" },
  };
}

interface Received {
  from: string;
  to: string[];
  raw: string;
  session: string;
  secure: boolean;
}

/** A real SMTP server (smtp-server, which offers PIPELINING unless told not to) recording what it gets. */
async function relay(options: Partial<SMTPServerOptions> = {}) {
  const received: Received[] = [];
  const commands: string[] = [];
  let sessions = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onConnect(_session, cb) {
      sessions += 1;
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        received.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "", to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString("utf8"), session: session.id, secure: Boolean((session as { secure?: boolean }).secure) });
        cb();
      });
    },
    ...options,
  });
  server.on("error", () => undefined);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;
  servers.push(server);
  return { port, url: `smtp://127.0.0.1:${port}`, received, commands, get sessions() { return sessions; }, server };
}

const servers: SMTPServer[] = [];
const transports: SmtpPoolTransport[] = [];
afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
});

function transport(url: string, over: Partial<ConstructorParameters<typeof SmtpPoolTransport>[0]> = {}) {
  const t = new SmtpPoolTransport({ url, poolSize: 2, maxMessagesPerConnection: 100, timeoutMs: 5_000, tlsRejectUnauthorized: true, requireTls: false, ignoreTls: false, ...over }, "test relay");
  transports.push(t);
  return t;
}

describe("dotStuff", () => {
  it("doubles a dot that starts a line, the first line included, and leaves other dots", () => {
    const stuffed = (s: string) => Buffer.concat(dotStuff(Buffer.from(s))).toString();
    expect(stuffed("a.b\r\n.hidden\r\nx. y\r\n..two\r\n")).toBe("a.b\r\n..hidden\r\nx. y\r\n...two\r\n");
    expect(stuffed(".first\r\nsecond\r\n.")).toBe("..first\r\nsecond\r\n..");
    const plain = Buffer.from("no dots at line starts.\r\n");
    expect(dotStuff(plain)).toEqual([plain]);
  });
});

describe("parseSmtpUrl", () => {
  it("reads scheme, host, port and credentials, with nodemailer's default ports", () => {
    expect(parseSmtpUrl("smtp://relay.test")).toEqual({ host: "relay.test", port: 587, secure: false, auth: undefined });
    expect(parseSmtpUrl("smtps://u%40x:p%3Aw@[::1]:4650")).toEqual({ host: "::1", port: 4650, secure: true, auth: { user: "u@x", pass: "p:w" } });
    expect(() => parseSmtpUrl("http://relay.test")).toThrow(/scheme/);
  });
});

describe("SmtpPoolTransport against a real SMTP server", () => {
  it("delivers byte for byte what buildMime built, dot-stuffed on the wire, over pooled connections", async () => {
    const r = await relay();
    const t = transport(r.url, { poolSize: 2 });
    const mails = Array.from({ length: 6 }, (_, i) => outgoingMail({ to: `r${i}@example.test`, text: `line one\n.starts with a dot ${i}\n..two\n`, html: "" }));
    const results = await Promise.all(mails.map((m) => t.send(m)));
    expect(results.every((x) => x.code === 250)).toBe(true);
    expect(r.received.map((m) => m.to[0]).sort()).toEqual(mails.map((m) => m.to).sort());
    for (const got of r.received) {
      expect(got.raw).toContain("\r\n.starts with a dot");
      expect(got.raw).toContain("\r\n..two\r\n");
      expect(got.from).toBe(mails[0]!.envelope.from);
    }
    // Two connections at most for six messages, each carrying several.
    expect(r.sessions).toBeLessThanOrEqual(2);
    expect(new Set(r.received.map((m) => m.session)).size).toBeLessThanOrEqual(2);
    // The body arrives as built (boundaries are drawn per build).
    const body = (raw: string) => raw.slice(raw.indexOf("\r\n\r\n")).replace(/=_mr_\w+/g, "=_b");
    expect(body(r.received.find((m) => m.to[0] === mails[0]!.to)!.raw)).toBe(body(buildMime(mails[0]!).toString()));
  });

  it("speaks one command at a time to a relay without PIPELINING", async () => {
    const r = await relay({ hidePIPELINING: true } as Partial<SMTPServerOptions>);
    const t = transport(r.url);
    await expect(t.send(outgoingMail({ to: "a@example.test" }))).resolves.toMatchObject({ code: 250 });
    await expect(t.send(outgoingMail({ to: "b@example.test" }))).resolves.toMatchObject({ code: 250 });
    expect(r.received.map((m) => m.to[0])).toEqual(["a@example.test", "b@example.test"]);
  });

  it("reports RCPT TO refusals as about the recipient, MAIL FROM refusals as not, and goes on on the same connection", async () => {
    const r = await relay({
      onMailFrom(address, _s, cb) {
        if (address.address.startsWith("blocked")) return cb(Object.assign(new Error("sender refused"), { responseCode: 553 }));
        cb();
      },
      onRcptTo(address, _s, cb) {
        if (address.address.startsWith("gone")) return cb(Object.assign(new Error("no such user"), { responseCode: 550 }));
        if (address.address.startsWith("grey")) return cb(Object.assign(new Error("try later"), { responseCode: 451 }));
        cb();
      },
    });
    const t = transport(r.url, { poolSize: 1 });
    const gone = await t.send(outgoingMail({ to: "gone@example.test" })).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(SmtpFailure);
    expect(gone).toMatchObject({ code: 550, aboutRecipient: true });
    await expect(t.send(outgoingMail({ to: "grey@example.test" }))).rejects.toMatchObject({ code: 451, aboutRecipient: true });
    const blocked = outgoingMail({ to: "ok@example.test" });
    blocked.envelope.from = "blocked@bounces.example.test";
    await expect(t.send(blocked)).rejects.toMatchObject({ code: 553, aboutRecipient: false });
    await expect(t.send(outgoingMail({ to: "ok@example.test" }))).resolves.toMatchObject({ code: 250 });
    expect(r.received.map((m) => m.to[0])).toEqual(["ok@example.test"]);
    expect(r.sessions).toBe(1);
  });

  for (const pipelining of [true, false]) {
    it(`sends to the recipient, cc and bcc in one transaction; a refused cc is listed, a refused recipient fails it (${pipelining ? "PIPELINING" : "one command at a time"})`, async () => {
      const r = await relay({
        ...(pipelining ? {} : { hidePIPELINING: true }),
        onRcptTo(address, _s, cb) {
          if (address.address.startsWith("gone")) return cb(Object.assign(new Error("no such user"), { responseCode: 550 }));
          if (address.address.startsWith("grey")) return cb(Object.assign(new Error("try later"), { responseCode: 451 }));
          cb();
        },
      } as Partial<SMTPServerOptions>);
      const t = transport(r.url, { poolSize: 1 });
      const mail = outgoingMail({ to: "ann@example.test" });
      mail.envelope.others = ["gone-cc@example.test", "bo@example.test", "grey-bcc@example.test", "cy@example.test"];
      const result = await t.send(mail);
      expect(result.code).toBe(250);
      expect(result.refused?.map((x) => [x.address, x.code])).toEqual([["gone-cc@example.test", 550], ["grey-bcc@example.test", 451]]);
      expect(r.received.map((m) => m.to)).toEqual([["ann@example.test", "bo@example.test", "cy@example.test"]]);
      // The recipient itself refused: nobody gets it, and the failure is the recipient's.
      const first = outgoingMail({ to: "gone@example.test" });
      first.envelope.others = ["bo@example.test"];
      await expect(t.send(first)).rejects.toMatchObject({ code: 550, aboutRecipient: true });
      expect(r.received).toHaveLength(1);
      // The connection goes on.
      await expect(t.send(outgoingMail({ to: "ok@example.test" }))).resolves.toMatchObject({ code: 250 });
    });
  }

  it("reports a refusal after DATA with its code, about the message", async () => {
    const r = await relay({
      onData(stream, _s, cb) {
        stream.resume();
        stream.on("end", () => cb(Object.assign(new Error("content rejected"), { responseCode: 554 })));
      },
    });
    await expect(transport(r.url).send(outgoingMail())).rejects.toMatchObject({ code: 554, aboutRecipient: true });
  });

  it("fails with code 0 when the relay refuses connections or cuts one mid-message", async () => {
    const r = await relay();
    const port = r.port;
    await new Promise<void>((res) => r.server.close(() => res()));
    servers.splice(servers.indexOf(r.server), 1);
    await expect(transport(`smtp://127.0.0.1:${port}`).send(outgoingMail())).rejects.toMatchObject({ code: 0, aboutRecipient: false });

    const cutting = await relay({
      onData(stream, session) {
        stream.once("data", () => {
          const conns = (cutting.server as unknown as { connections: Set<{ id: string; _socket: { destroy(): void } }> }).connections;
          for (const c of conns) if (c.id === session.id) c._socket.destroy();
        });
      },
    });
    await expect(transport(cutting.url).send(outgoingMail())).rejects.toMatchObject({ code: 0 });
  });

  it("retires a connection after its message quota and opens another", async () => {
    const r = await relay();
    const t = transport(r.url, { poolSize: 1, maxMessagesPerConnection: 2 });
    for (let i = 0; i < 5; i++) await t.send(outgoingMail({ to: `q${i}@example.test` }));
    expect(r.received).toHaveLength(5);
    expect(new Set(r.received.map((m) => m.session)).size).toBe(3);
  });

  it("sends again on a new connection when the relay closed an idle one", async () => {
    const r = await relay();
    const t = transport(r.url, { poolSize: 1 });
    await t.send(outgoingMail({ to: "first@example.test" }));
    // The relay drops every connection (as an idle timeout would) without the pool noticing first.
    const conns = (r.server as unknown as { connections: Set<{ _socket: { destroy(): void } }> }).connections;
    for (const c of conns) c._socket.destroy();
    await expect(t.send(outgoingMail({ to: "second@example.test" }))).resolves.toMatchObject({ code: 250 });
    expect(r.received.map((m) => m.to[0])).toEqual(["first@example.test", "second@example.test"]);
  });

  it("authenticates with the URL's credentials (PLAIN) and is refused with wrong ones", async () => {
    const r = await relay({
      authOptional: false,
      allowInsecureAuth: true,
      onAuth(auth, _s, cb) {
        if (auth.username === "mailroom" && auth.password === "s3cret:!") return cb(null, { user: auth.username });
        cb(Object.assign(new Error("bad credentials"), { responseCode: 535 }));
      },
    });
    await expect(transport(`smtp://mailroom:${encodeURIComponent("s3cret:!")}@127.0.0.1:${r.port}`).send(outgoingMail())).resolves.toMatchObject({ code: 250 });
    await expect(transport(`smtp://mailroom:wrong@127.0.0.1:${r.port}`).send(outgoingMail())).rejects.toMatchObject({ code: 535, aboutRecipient: false });
    expect(r.received).toHaveLength(1);
  });

  it("upgrades with STARTTLS when offered, and refuses a relay without it when TLS is required", async () => {
    // smtp-server offers STARTTLS with its built-in self-signed certificate.
    const tlsRelay = await relay({ disabledCommands: [] });
    await expect(transport(tlsRelay.url).send(outgoingMail())).rejects.toMatchObject({ code: 0 });
    await expect(transport(tlsRelay.url, { tlsRejectUnauthorized: false }).send(outgoingMail())).resolves.toMatchObject({ code: 250 });
    expect(tlsRelay.received.map((m) => m.secure)).toEqual([true]);
    await expect(transport(tlsRelay.url, { ignoreTls: true }).send(outgoingMail())).resolves.toMatchObject({ code: 250 });
    expect(tlsRelay.received.map((m) => m.secure)).toEqual([true, false]);

    const plain = await relay();
    await expect(transport(plain.url, { requireTls: true }).send(outgoingMail())).rejects.toThrow(/STARTTLS/);
    expect(plain.received).toHaveLength(0);
  });
  it("says whether the failure came before the message's body went out (beforeData)", async () => {
    const r = await relay({
      onMailFrom(address, _s, cb) {
        if (address.address.startsWith("blocked")) return cb(Object.assign(new Error("sender refused"), { responseCode: 553 }));
        cb();
      },
      onRcptTo(address, _s, cb) {
        if (address.address.startsWith("grey")) return cb(Object.assign(new Error("try later"), { responseCode: 451 }));
        cb();
      },
      onData(stream, session, cb) {
        stream.resume();
        stream.on("end", () => (session.envelope.rcptTo[0]!.address.startsWith("spam") ? cb(Object.assign(new Error("content rejected"), { responseCode: 554 })) : cb()));
      },
    });
    const t = transport(r.url, { poolSize: 1 });
    await expect(t.send(outgoingMail({ to: "grey@example.test" }))).rejects.toMatchObject({ code: 451, beforeData: true });
    const blocked = outgoingMail({ to: "ok@example.test" });
    blocked.envelope.from = "blocked@bounces.example.test";
    await expect(t.send(blocked)).rejects.toMatchObject({ code: 553, beforeData: true });
    await expect(t.send(outgoingMail({ to: "spam@example.test" }))).rejects.toMatchObject({ code: 554, beforeData: false });

    const closed = await relay();
    await new Promise<void>((res) => closed.server.close(() => res()));
    servers.splice(servers.indexOf(closed.server), 1);
    await expect(transport(closed.url).send(outgoingMail())).rejects.toMatchObject({ code: 0, beforeData: true });

    const cutting = await relay({
      onData(stream, session) {
        stream.once("data", () => {
          const conns = (cutting.server as unknown as { connections: Set<{ id: string; _socket: { destroy(): void } }> }).connections;
          for (const c of conns) if (c.id === session.id) c._socket.destroy();
        });
      },
    });
    await expect(transport(cutting.url).send(outgoingMail())).rejects.toMatchObject({ code: 0, beforeData: false });

    const tlsRelay = await relay({ disabledCommands: [] });
    await expect(transport(tlsRelay.url).send(outgoingMail())).rejects.toMatchObject({ code: 0, beforeData: true });
  });

  it("connects from the configured local address", async () => {
    let remote = "";
    const r = await relay({
      onConnect(session, cb) {
        remote = session.remoteAddress.replace(/^::ffff:/, "");
        cb();
      },
    });
    const t = new SmtpPool({ ...parseSmtpUrl(r.url), timeoutMs: 5_000, tlsRejectUnauthorized: true, requireTls: false, ignoreTls: false, localAddress: "127.0.0.3" }, { poolSize: 1, maxMessagesPerConnection: 10 });
    await t.send("b@bounces.example.test", ["ann@example.test"], buildMime(outgoingMail()));
    await t.close();
    expect(remote).toBe("127.0.0.3");
  });
});
