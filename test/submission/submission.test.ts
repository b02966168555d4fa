/**
 * SMTP submission (DESIGN §9.5) as real processes: the submission unit, the accounts and
 * audience units, the email service, delivery and the gateway, a real nats-server and the harness's SMTP sink.
 * Two independent clients drive it: nodemailer and Debian's swaks.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import nodemailer, { type SendMailOptions } from "nodemailer";
import PostalMime from "postal-mime";
import { randomBytes } from "node:crypto";
import { connectClient } from "@mailroom/kit";
import { EmailService } from "@mailroom/proto/email/v1/email_pb.js";
import { freePort } from "../harness/ports.js";
import { requireProgram } from "../harness/programs.js";
import type { ReceivedMessage } from "../harness/smtp-sink.js";
import { startSystem, type TestSystem } from "../harness/system.js";

const run = promisify(execFile);
const KEY = "mr_test_acme_1";
const BOOTSTRAP = {
  workspaces: [{ id: "ws_acme", name: "Acme", apiKeys: [{ key: KEY, scopes: ["api_user"] }], verifiedDomains: ["acme.test"], flags: { verified: true } }],
};
/** Small enough to test 552 with a modest message. */
const MAX_BYTES = 64 * 1024;

let sys: TestSystem;
let certDir: string;
let cert: string;
let port: number;
let tlsPort: number;

beforeAll(async () => {
  certDir = await mkdtemp(path.join(os.tmpdir(), "mailroom-submission-cert-"));
  // node:crypto cannot make a certificate; openssl can.
  await run(requireProgram("openssl"), [
    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
    "-keyout", path.join(certDir, "key.pem"), "-out", path.join(certDir, "cert.pem"),
  ]);
  cert = await readFile(path.join(certDir, "cert.pem"), "utf8");
  tlsPort = await freePort();
  sys = await startSystem({
    bootstrap: BOOTSTRAP,
    units: ["accounts", "audience", "renderer", "email", "delivery", "submission", "gateway"],
    env: {
      MAILROOM_SUBMISSION_TLS_CERT: path.join(certDir, "cert.pem"),
      MAILROOM_SUBMISSION_TLS_KEY: path.join(certDir, "key.pem"),
      MAILROOM_SUBMISSION_TLS_PORT: String(tlsPort),
      MAILROOM_SUBMISSION_MAX_BYTES: String(MAX_BYTES),
      // Reachable from this machine's other addresses too (its Connect services stay on loopback).
      MAILROOM_SUBMISSION_HOST: "0.0.0.0",
      // A budget this suite can exhaust (the harness's default is 100,000 a minute).
      MAILROOM_RATE_LIMIT_PER_MINUTE: "60",
      MAILROOM_RATE_LIMIT_BURST: "40",
    },
  });
  port = sys.ports.submission;
}, 120_000);

afterAll(async () => {
  await sys?.stop();
  if (certDir) await rm(certDir, { recursive: true, force: true });
});

type MailOptions = SendMailOptions;

/** An address of this machine other than loopback, if it has one. */
const external = Object.values(os.networkInterfaces()).flat().find((i) => i && !i.internal && i.family === "IPv4")?.address;

function transport(opts: { password?: string; secure?: boolean; requireTLS?: boolean; ignoreTLS?: boolean; host?: string } = {}) {
  return nodemailer.createTransport({
    host: opts.host ?? "127.0.0.1",
    port: opts.secure ? tlsPort : port,
    secure: opts.secure ?? false,
    requireTLS: opts.requireTLS ?? false,
    ignoreTLS: opts.ignoreTLS ?? !opts.requireTLS,
    auth: { user: "wordpress", pass: opts.password ?? KEY },
    tls: { ca: [cert], servername: "localhost" },
  });
}

async function send(mail: MailOptions, opts: Parameters<typeof transport>[0] = {}) {
  const t = transport(opts);
  try {
    return await t.sendMail(mail);
  } finally {
    t.close();
  }
}

/** The error nodemailer gave, as SMTP code and reply. */
async function refusal(promise: Promise<unknown>): Promise<{ code?: number; response: string }> {
  try {
    await promise;
  } catch (err) {
    const e = err as { responseCode?: number; response?: string; message: string };
    return { code: e.responseCode, response: e.response ?? e.message };
  }
  throw new Error("expected the server to refuse");
}

const sentTo = (address: string) => sys.sink!.messages.filter((m) => m.to.includes(address));
/** The message delivered to `address` (each test sends to its own addresses: others' late mail does not confuse it). */
async function deliveredTo(address: string, timeoutMs = 20_000): Promise<ReceivedMessage> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = sentTo(address)[0];
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`nothing delivered to ${address} within ${timeoutMs} ms${await logs()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const logs = async () => `\n--- submission log ---\n${await sys.log("submission")}\n--- email log ---\n${await sys.log("email", 20)}`;

async function swaks(args: string[]): Promise<{ code: number; out: string }> {
  // Names the package when swaks is missing, instead of an ENOENT exit code.
  const binary = requireProgram("swaks");
  try {
    const { stdout, stderr } = await run(binary, ["--server", "127.0.0.1", "--timeout", "20", ...args], { timeout: 30_000 });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: (e.stdout ?? "") + (e.stderr ?? "") };
  }
}

describe("SMTP submission with nodemailer", () => {
  it("accepts a message authenticated with an API key and delivers it with its fields", async () => {
    const info = await send({
      from: '"Acme" <hello@acme.test>',
      to: "ann@example.test",
      subject: "Over SMTP",
      html: "<p>Hello from an app that speaks SMTP</p>",
      text: "Hello from an app that speaks SMTP",
      replyTo: "help@acme.test",
      headers: { "X-Ticket": "42" },
    });
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as trs_[0-9a-z]{26}$/);
    const id = /trs_[0-9a-z]{26}/.exec(info.response)![0];
    const msg = await deliveredTo("ann@example.test");
    const parsed = await PostalMime.parse(msg.raw);
    expect(msg.to).toEqual(["ann@example.test"]);
    expect(parsed.from).toMatchObject({ address: "hello@acme.test", name: "Acme" });
    expect(parsed.subject).toBe("Over SMTP");
    expect(parsed.html).toContain("Hello from an app that speaks SMTP");
    expect(parsed.replyTo?.[0]).toMatchObject({ address: "help@acme.test" });
    // The record is the API's: GET /v1/emails/:id finds it.
    const got = await sys.api("GET", `/v1/emails/${id}`, { key: KEY });
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(got.body.email).toMatchObject({ id, to: "ann@example.test", from: "hello@acme.test", subject: "Over SMTP" });
  });

  it("refuses a wrong key with 535 5.7.8 and sends nothing", async () => {
    const r = await refusal(send({ from: "hello@acme.test", to: "nokey@example.test", subject: "x", text: "x" }, { password: "mr_not_a_key_123456" }));
    expect(r.code).toBe(535);
    expect(r.response).toMatch(/^535 5\.7\.8 /);
    await new Promise((res) => setTimeout(res, 300));
    expect(sentTo("nokey@example.test")).toHaveLength(0);
  });

  it("refuses an unverified sender with 550 5.7.1 naming the verified domains", async () => {
    const r = await refusal(send({ from: "someone@gmail.test", to: "ann@example.test", subject: "x", text: "x" }));
    expect(r.code).toBe(550);
    expect(r.response).toMatch(/^550 5\.7\.1 .*acme\.test/);
  });

  it("refuses a message over the size limit with 552", async () => {
    const r = await refusal(send({ from: "hello@acme.test", to: "ann@example.test", subject: "big", text: "x".repeat(MAX_BYTES + 10_000) }));
    expect(r.code).toBe(552);
  });

  it("sends a resubmitted Message-ID once", async () => {
    const mail = { from: "hello@acme.test", to: "idem@example.test", subject: "Once", text: "only once", messageId: "<once-1@acme.test>" };
    const first = await send(mail);
    const second = await send(mail);
    expect(first.response).toMatch(/queued as trs_/);
    // The same email: the first answer again.
    expect(second.response).toBe(first.response);
    await deliveredTo("idem@example.test");
    await new Promise((res) => setTimeout(res, 1_000));
    expect(sentTo("idem@example.test")).toHaveLength(1);
  });

  it("answers 451 while the email service is down, then accepts the retry once it is back", async () => {
    const mail = { from: "hello@acme.test", to: "retry@example.test", subject: "Retry", text: "after the fault", messageId: "<retry-1@acme.test>" };
    await sys.processes.kill("email", "SIGKILL");
    try {
      const r = await refusal(send(mail));
      expect(r.code, r.response + (await logs())).toBe(451);
      expect(r.response).toMatch(/^451 4\.3\.0 /);
    } finally {
      await sys.processes.restart("email");
    }
    const info = await send(mail);
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as trs_/);
    expect((await deliveredTo("retry@example.test")).to).toEqual(["retry@example.test"]);
  }, 90_000);

  it("upgrades with STARTTLS on a self-signed certificate, and serves implicit TLS on its second port", async () => {
    const viaStartTls = await send({ from: "hello@acme.test", to: "tls@example.test", subject: "STARTTLS", text: "encrypted" }, { requireTLS: true });
    expect(viaStartTls.response).toMatch(/^250 2\.0\.0 Ok: queued as trs_/);
    const viaTls = await send({ from: "hello@acme.test", to: "tls2@example.test", subject: "Implicit TLS", text: "encrypted too" }, { secure: true });
    expect(viaTls.response).toMatch(/^250 2\.0\.0 Ok: queued as trs_/);
    await deliveredTo("tls@example.test");
    await deliveredTo("tls2@example.test");
  });
});

describe.skipIf(!external)("from another machine (this one's non-loopback address)", () => {
  it("refuses AUTH in clear with 538 5.7.11 and takes it after STARTTLS", async () => {
    const clear = await refusal(send({ from: "hello@acme.test", to: "remote@example.test", subject: "x", text: "x" }, { host: external }));
    expect(clear.code).toBe(538);
    expect(clear.response).toMatch(/^538 5\.7\.11 Encryption required: issue STARTTLS/);
    const info = await send({ from: "hello@acme.test", to: "remote@example.test", subject: "Remote", text: "over TLS" }, { host: external, requireTLS: true });
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as trs_/);
  });
});

describe("what a submitted message carries", () => {
  it("sends one email per To recipient; Cc, blind recipients, X-* headers, attachments (inline by content id) and tags travel with it", async () => {
    const pdf = randomBytes(20_000);
    const png = randomBytes(3_000);
    const info = await send({
      from: '"Acme Billing" <billing@acme.test>',
      to: ["Ann <ann.inv@example.test>", "bob.inv@example.test"],
      cc: "Carol <carol.inv@example.test>",
      bcc: "dave.inv@example.test",
      subject: "Your invoice",
      html: '<p>Invoice attached. <img src="cid:logo@acme"></p>',
      headers: { "X-Ticket": "42", "X-Mailroom-Tags": "kind=invoice, plan=pro" },
      attachments: [
        { filename: "invoice.pdf", content: pdf, contentType: "application/pdf" },
        { filename: "logo.png", content: png, contentType: "image/png", cid: "logo@acme" },
      ],
    });
    const ids = info.response.match(/trs_[0-9a-z]{26}/g) ?? [];
    expect(ids, info.response).toHaveLength(2);
    const toAnn = await deliveredTo("ann.inv@example.test");
    const toBob = await deliveredTo("bob.inv@example.test");
    // The envelope: the first email to Ann, Carol and Dave; Bob's alone (nobody receives two copies).
    expect([...toAnn.to].sort()).toEqual(["ann.inv@example.test", "carol.inv@example.test", "dave.inv@example.test"]);
    expect(toBob.to).toEqual(["bob.inv@example.test"]);
    const parsed = await PostalMime.parse(toAnn.raw);
    expect(parsed.cc?.[0]).toMatchObject({ address: "carol.inv@example.test" });
    expect(parsed.headers.some((h) => h.key === "bcc")).toBe(false);
    expect(toAnn.raw).not.toContain("dave.inv@example.test");
    expect(parsed.headers.find((h) => h.key === "x-ticket")?.value).toBe("42");
    expect(parsed.headers.some((h) => h.key === "x-mailroom-tags")).toBe(false);
    const byName = new Map(parsed.attachments.map((a) => [a.filename, a]));
    expect(Buffer.from(byName.get("invoice.pdf")!.content as ArrayBuffer).equals(pdf)).toBe(true);
    expect(byName.get("invoice.pdf")!.mimeType).toBe("application/pdf");
    expect(Buffer.from(byName.get("logo.png")!.content as ArrayBuffer).equals(png)).toBe(true);
    expect(byName.get("logo.png")!.contentId).toBe("<logo@acme>");
    expect(parsed.html).toContain("cid:logo@acme");
    // The records carry the tags and list the attachments.
    const email = connectClient(EmailService, `http://127.0.0.1:${sys.ports.email}`);
    const record = (await email.getEmail({ workspaceId: "ws_acme", id: ids[0]! })).email!;
    expect(record.tags.map((t) => [t.name, t.value])).toEqual([["kind", "invoice"], ["plan", "pro"]]);
    // In the order the MIME tree gives them (nodemailer nests the inline part with the HTML, first).
    expect(record.attachments.map((a) => [a.filename, Number(a.size), a.contentId]).sort()).toEqual([["invoice.pdf", 20_000, ""], ["logo.png", 3_000, "logo@acme"]]);
  });

  it("answers the email service's refusals as permanent replies", async () => {
    // An executable attachment: the API's 400 attachment_type_not_allowed.
    const exe = await refusal(send({ from: "hello@acme.test", to: "x@example.test", subject: "exe", text: "x", attachments: [{ filename: "setup.exe", content: Buffer.from("MZ") }] }));
    expect(exe.code).toBe(550);
    expect(exe.response).toMatch(/^550 5\.6\.0 attachment_type_not_allowed: .*setup\.exe/);
    const tags = await refusal(send({ from: "hello@acme.test", to: "x@example.test", subject: "tags", text: "x", headers: { "X-Mailroom-Tags": "bad tag=x" } }));
    expect(tags.code).toBe(550);
    expect(tags.response).toMatch(/invalid_tags/);
  });
});

describe("SMTP submission with swaks", () => {
  const base = ["--port", () => String(port)] as const;
  const portArgs = () => [base[0], base[1]()];

  it("sends with AUTH PLAIN and with AUTH LOGIN", async () => {
    for (const method of ["PLAIN", "LOGIN"]) {
      const r = await swaks([...portArgs(), "--auth", method, "--auth-user", "any", "--auth-password", KEY,
        "--from", "hello@acme.test", "--to", `swaks-${method.toLowerCase()}@example.test`, "--header", `Subject: swaks ${method}`, "--body", "from swaks"]);
      expect(r.code, r.out).toBe(0);
      expect(r.out).toMatch(/<- +250 2\.0\.0 Ok: queued as trs_[0-9a-z]{26}/);
    }
    await deliveredTo("swaks-plain@example.test");
    await deliveredTo("swaks-login@example.test");
  });

  it("is refused with 535 for a wrong key and 550 5.7.1 for an unverified sender", async () => {
    const bad = await swaks([...portArgs(), "--auth", "PLAIN", "--auth-user", "any", "--auth-password", "mr_wrong_key_0000",
      "--from", "hello@acme.test", "--to", "x@example.test"]);
    expect(bad.code).not.toBe(0);
    expect(bad.out).toMatch(/<\*\* +535 5\.7\.8 /);
    const unverified = await swaks([...portArgs(), "--auth", "LOGIN", "--auth-user", "any", "--auth-password", KEY,
      "--from", "x@gmail.test", "--to", "x@example.test", "--header", "From: x@gmail.test"]);
    expect(unverified.code).not.toBe(0);
    expect(unverified.out).toMatch(/<\*\* +550 5\.7\.1 .*acme\.test/);
  });

  it("uses STARTTLS and implicit TLS", async () => {
    const starttls = await swaks([...portArgs(), "-tls", "--auth", "PLAIN", "--auth-user", "any", "--auth-password", KEY,
      "--from", "hello@acme.test", "--to", "swaks-tls@example.test", "--header", "Subject: swaks tls"]);
    expect(starttls.code, starttls.out).toBe(0);
    expect(starttls.out).toMatch(/TLS started/);
    const implicit = await swaks(["--port", String(tlsPort), "--tls-on-connect", "--auth", "PLAIN", "--auth-user", "any", "--auth-password", KEY,
      "--from", "hello@acme.test", "--to", "swaks-tlsc@example.test", "--header", "Subject: swaks tls on connect"]);
    expect(implicit.code, implicit.out).toBe(0);
    await deliveredTo("swaks-tls@example.test");
    await deliveredTo("swaks-tlsc@example.test");
  });
});

describe("SMTP submission with swaks: size, idempotency, a transient fault, an attachment", () => {
  const auth = () => ["--port", String(port), "--auth", "PLAIN", "--auth-user", "any", "--auth-password", KEY, "--from", "hello@acme.test"];

  it("is refused with 552 over the size limit", async () => {
    const body = path.join(certDir, "big.txt");
    await writeFile(body, "y".repeat(MAX_BYTES + 10_000));
    const r = await swaks([...auth(), "--to", "big@example.test", "--body", `@${body}`]);
    expect(r.code).not.toBe(0);
    expect(r.out).toMatch(/<\*\* +552 /);
  });

  it("sends a resubmitted Message-ID once", async () => {
    const args = [...auth(), "--to", "swaks-once@example.test", "--header", "Message-Id: <swaks-once-1@acme.test>", "--header", "Subject: once"];
    const first = await swaks(args);
    const second = await swaks(args);
    const queued = (out: string) => /<- +250 2\.0\.0 (Ok: queued as trs_[0-9a-z]{26})/.exec(out)?.[1];
    expect(queued(first.out), first.out).toBeDefined();
    expect(queued(second.out)).toBe(queued(first.out));
    await deliveredTo("swaks-once@example.test");
    await new Promise((res) => setTimeout(res, 1_000));
    expect(sentTo("swaks-once@example.test")).toHaveLength(1);
  });

  it("gets 451 while the email service is down and 250 on the retry", async () => {
    const args = [...auth(), "--to", "swaks-retry@example.test", "--header", "Message-Id: <swaks-retry-1@acme.test>"];
    await sys.processes.kill("email", "SIGKILL");
    try {
      const down = await swaks(args);
      expect(down.code).not.toBe(0);
      expect(down.out).toMatch(/<\*\* +451 4\.3\.0 /);
    } finally {
      await sys.processes.restart("email");
    }
    const up = await swaks(args);
    expect(up.code, up.out).toBe(0);
    expect((await deliveredTo("swaks-retry@example.test")).to).toEqual(["swaks-retry@example.test"]);
  }, 90_000);

  it("carries an attachment byte for byte", async () => {
    const file = path.join(certDir, "report.pdf");
    const bytes = randomBytes(5_000);
    await writeFile(file, bytes);
    const r = await swaks([...auth(), "--to", "swaks-attach@example.test", "--header", "Subject: report",
      "--attach-type", "application/pdf", "--attach-name", "report.pdf", "--attach", `@${file}`]);
    expect(r.code, r.out).toBe(0);
    const parsed = await PostalMime.parse((await deliveredTo("swaks-attach@example.test")).raw);
    const report = parsed.attachments.find((a) => a.filename === "report.pdf");
    expect(report?.mimeType).toBe("application/pdf");
    expect(Buffer.from(report!.content as ArrayBuffer).equals(bytes)).toBe(true);
  });
});

describe("per-key rate limit", () => {
  it("answers 451 4.7.0 once the key's budget (the API's, shared) is spent", async () => {
    const t = transport();
    let refused: { code?: number; response: string } | undefined;
    try {
      for (let i = 0; i < 60 && !refused; i++) {
        try {
          await t.sendMail({ from: "hello@acme.test", to: `burst-${i}@example.test`, subject: "burst", text: "x" });
        } catch (err) {
          const e = err as { responseCode?: number; response?: string; message: string };
          refused = { code: e.responseCode, response: e.response ?? e.message };
        }
      }
    } finally {
      t.close();
    }
    expect(refused, "never refused").toBeDefined();
    expect(refused!.code).toBe(451);
    expect(refused!.response).toMatch(/^451 4\.7\.0 .*rate limit/i);
    // The API sees the same budget spent. The bucket refills a token a second, and a loaded
    // machine may take that long between the refusal and this call: a few calls in a row must
    // meet the empty bucket.
    const statuses: number[] = [];
    for (let i = 0; i < 3 && !statuses.includes(429); i++) {
      statuses.push((await sys.api("POST", "/v1/emails", { key: KEY, body: { from: "hello@acme.test", to: `api-${i}@example.test`, subject: "s", html: "<p>x</p>" } })).status);
    }
    expect(statuses).toContain(429);
  }, 60_000);
});

describe("logs", () => {
  it("never hold a password", async () => {
    const log = await sys.log("submission", 100_000);
    expect(log).toContain("SMTP submission listening");
    for (const secret of [KEY, "mr_not_a_key_123456", "mr_wrong_key_0000"]) expect(log).not.toContain(secret);
  });
});
