/**
 * Support for the direct delivery suite: a real DNS server (dns2, UDP on loopback) serving a
 * test zone, SMTP sinks each on its own loopback address (127.0.0.x) at the one MX port the
 * suite gives delivery (MAILROOM_DELIVERY_MX_PORT), an HTTPS server for MTA-STS policies,
 * and certificates made with openssl (a test CA, certificates it signs, a self-signed one).
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import https from "node:https";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import dns2 from "dns2";
import { SMTPServer, type SMTPServerSession } from "smtp-server";

const run = promisify(execFile);

// ---------- DNS ----------

export type ZoneRecord =
  | { type: "MX"; exchange: string; priority: number }
  | { type: "A"; address: string }
  | { type: "AAAA"; address: string }
  | { type: "TXT"; text: string };

export interface TestDns {
  port: number;
  /** `ip:port` for MAILROOM_DELIVERY_DNS_SERVERS. */
  server: string;
  /** Records by lower-case name; a name with no record at all is NXDOMAIN. */
  zone: Map<string, ZoneRecord[]>;
  /** Names answered with SERVFAIL. */
  failing: Set<string>;
  /** Queries seen, `TYPE name`. */
  queries: string[];
  add(name: string, ...records: ZoneRecord[]): void;
  close(): Promise<void>;
}

export async function startDns(): Promise<TestDns> {
  const { Packet } = dns2;
  const zone = new Map<string, ZoneRecord[]>();
  const failing = new Set<string>();
  const queries: string[] = [];
  const typeName = (t: number) => Object.entries(Packet.TYPE).find(([, v]) => v === t)?.[0] ?? String(t);
  const server = dns2.createUDPServer((request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    const name = question!.name.toLowerCase();
    const type = typeName(question!.type);
    queries.push(`${type} ${name}`);
    const records = zone.get(name);
    if (failing.has(name)) response.header.rcode = 2;
    else if (!records) response.header.rcode = 3;
    else {
      for (const r of records.filter((r) => r.type === type)) {
        const base = { name: question!.name, type: Packet.TYPE[r.type], class: Packet.CLASS.IN, ttl: 60 };
        if (r.type === "MX") response.answers.push({ ...base, exchange: r.exchange, priority: r.priority } as never);
        else if (r.type === "TXT") response.answers.push({ ...base, data: r.text.match(/.{1,255}/g) } as never);
        else response.answers.push({ ...base, address: r.address } as never);
      }
    }
    void send(response);
  });
  server.on("requestError", () => undefined);
  await server.listen(0, "127.0.0.1");
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    server: `127.0.0.1:${port}`,
    zone,
    failing,
    queries,
    add(name, ...records) {
      const key = name.toLowerCase();
      zone.set(key, [...(zone.get(key) ?? []), ...records]);
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

// ---------- certificates ----------

export interface TestPki {
  dir: string;
  caFile: string;
  ca: string;
  /** A certificate (key and cert PEM) for these DNS names, signed by the test CA. */
  issue(names: string[]): Promise<{ key: string; cert: string }>;
  /** A self-signed certificate for these names (no CA vouches for it). */
  selfSigned(names: string[]): Promise<{ key: string; cert: string }>;
  remove(): Promise<void>;
}

export async function makePki(): Promise<TestPki> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "mailroom-direct-pki-"));
  const caKey = path.join(dir, "ca.key");
  const caFile = path.join(dir, "ca.pem");
  await run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Mailroom Test CA", "-keyout", caKey, "-out", caFile]);
  let serial = 0;
  const san = (names: string[]) => `subjectAltName=${names.map((n) => `DNS:${n}`).join(",")}`;
  return {
    dir,
    caFile,
    ca: await readFile(caFile, "utf8"),
    async issue(names) {
      serial += 1;
      const base = path.join(dir, `leaf${serial}`);
      await run("openssl", ["req", "-newkey", "rsa:2048", "-nodes", "-subj", `/CN=${names[0]}`, "-keyout", `${base}.key`, "-out", `${base}.csr`]);
      await writeFile(`${base}.ext`, `${san(names)}\n`);
      await run("openssl", ["x509", "-req", "-in", `${base}.csr`, "-CA", caFile, "-CAkey", caKey, "-CAcreateserial", "-days", "2", "-extfile", `${base}.ext`, "-out", `${base}.pem`]);
      return { key: await readFile(`${base}.key`, "utf8"), cert: await readFile(`${base}.pem`, "utf8") };
    },
    async selfSigned(names) {
      serial += 1;
      const base = path.join(dir, `self${serial}`);
      await run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", `/CN=${names[0]}`, "-addext", san(names), "-keyout", `${base}.key`, "-out", `${base}.pem`]);
      return { key: await readFile(`${base}.key`, "utf8"), cert: await readFile(`${base}.pem`, "utf8") };
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

// ---------- MX sinks ----------

export interface MxReceived {
  from: string;
  to: string[];
  raw: string;
  secure: boolean;
  session: string;
  /** The name the client gave in EHLO. */
  helo: string;
}

export interface MxSink {
  address: string;
  received: MxReceived[];
  /** Connections accepted so far, and the most open at once. */
  readonly connections: number;
  readonly maxConcurrent: number;
  /** Answers RCPT TO with a fault (e.g. 451 greylisting) when this returns one. */
  rcptFault?: (recipient: string) => { code: number; message: string } | undefined;
  /** Answers the connection with this (e.g. 421 too busy) instead of a greeting. */
  connectFault?: { code: number; message: string };
  /** Holds each DATA's reply this long (keeps connections busy). */
  dataDelayMs: number;
  stop(): Promise<void>;
}

/** An SMTP server (smtp-server) on `address:port`; STARTTLS offered with `tls`, else not. */
export async function startMxSink(address: string, port: number, tls?: { key: string; cert: string }): Promise<MxSink> {
  const received: MxReceived[] = [];
  let open = 0;
  let connections = 0;
  let maxConcurrent = 0;
  const sink: MxSink = {
    address,
    received,
    get connections() {
      return connections;
    },
    get maxConcurrent() {
      return maxConcurrent;
    },
    dataDelayMs: 0,
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
  const server = new SMTPServer({
    authOptional: true,
    logger: false,
    ...(tls ? { key: tls.key, cert: tls.cert } : { disabledCommands: ["STARTTLS"] }),
    onConnect(_session, cb) {
      connections += 1;
      open += 1;
      maxConcurrent = Math.max(maxConcurrent, open);
      if (sink.connectFault) return cb(Object.assign(new Error(sink.connectFault.message), { responseCode: sink.connectFault.code }));
      cb();
    },
    onClose() {
      open -= 1;
    },
    onRcptTo(addr, _session, cb) {
      const fault = sink.rcptFault?.(addr.address);
      if (!fault) return cb();
      cb(Object.assign(new Error(fault.message), { responseCode: fault.code }));
    },
    onData(stream, session: SMTPServerSession, cb) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString("utf8"),
          secure: Boolean((session as { secure?: boolean }).secure),
          session: session.id,
          helo: session.hostNameAppearsAs,
        });
        setTimeout(() => cb(), sink.dataDelayMs);
      });
    },
  });
  server.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.server.once("error", reject);
    server.listen(port, address, () => resolve());
  });
  return sink;
}

// ---------- MTA-STS policy host ----------

export interface PolicyHost {
  address: string;
  port: number;
  /** Policy text by domain (the part after `mta-sts.` in the Host header). */
  policies: Map<string, string>;
  fetches: string[];
  stop(): Promise<void>;
}

export async function startPolicyHost(address: string, port: number, tls: { key: string; cert: string }): Promise<PolicyHost> {
  const policies = new Map<string, string>();
  const fetches: string[] = [];
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const host = (req.headers.host ?? "").replace(/:\d+$/, "").toLowerCase();
    fetches.push(`${host}${req.url}`);
    const policy = req.url === "/.well-known/mta-sts.txt" ? policies.get(host.replace(/^mta-sts\./, "")) : undefined;
    if (!policy) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": "text/plain" }).end(policy);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, address, () => resolve());
  });
  return { address, port, policies, fetches, stop: () => new Promise<void>((r) => server.close(() => r())) };
}
