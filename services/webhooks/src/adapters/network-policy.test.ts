import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NetworkPolicy, parseAllowNetworks } from "./network-policy.js";
import { HttpWebhookSender } from "./http-sender.js";
import { tableLookup } from "../testing.js";
import { loadWebhooksSettings } from "../settings.js";

const LOOPBACK = ["127.0.0.0/8", "::1/128"];

describe("webhook target policy", () => {
  it("refuses loopback, private, link-local, CGNAT, multicast, unspecified and reserved addresses, IPv4-mapped ones included", () => {
    const policy = new NetworkPolicy();
    const refused = {
      "127.0.0.1": "loopback",
      "10.1.2.3": "private",
      "172.16.0.1": "private",
      "192.168.1.1": "private",
      "169.254.169.254": "link-local",
      "100.64.0.1": "carrier-grade NAT",
      "224.0.0.1": "multicast",
      "255.255.255.255": "broadcast",
      "0.0.0.0": "unspecified",
      "240.0.0.1": "non-public",
      "::1": "loopback",
      "::": "unspecified",
      "fc00::1": "private",
      "fd12:3456::1": "private",
      "fe80::1": "link-local",
      "ff02::1": "multicast",
      "::ffff:127.0.0.1": "loopback",
      "::ffff:10.0.0.1": "private",
      "::ffff:169.254.169.254": "link-local",
      "::7f00:1": "non-public",
      "64:ff9b::a00:1": "non-public",
    };
    for (const [address, kind] of Object.entries(refused)) expect(policy.refusalOf(address), address).toContain(kind);
    for (const address of ["93.184.215.14", "8.8.8.8", "2606:4700::6810:85e5", "::ffff:8.8.8.8"]) expect(policy.refusalOf(address), address).toBeUndefined();
  });

  it("allows what MAILROOM_WEBHOOK_ALLOW_NETWORKS trusts, and only that", () => {
    const policy = new NetworkPolicy(["10.0.0.0/8", "127.0.0.1", "::1/128"]);
    expect(policy.refusalOf("10.200.0.1")).toBeUndefined();
    expect(policy.refusalOf("::ffff:10.0.0.1")).toBeUndefined();
    expect(policy.refusalOf("127.0.0.1")).toBeUndefined();
    expect(policy.refusalOf("127.0.0.2")).toContain("loopback");
    expect(policy.refusalOf("::1")).toBeUndefined();
    expect(policy.refusalOf("169.254.169.254")).toContain("link-local");
    expect(policy.refusalOf("192.168.0.1")).toContain("private");
  });

  it("reads the setting, refusing what is not a CIDR", () => {
    expect(loadWebhooksSettings({}).allowNetworks).toEqual([]);
    expect(loadWebhooksSettings({ MAILROOM_WEBHOOK_ALLOW_NETWORKS: " 10.0.0.0/8, fd00::/8 ,127.0.0.1" }).allowNetworks).toEqual(["10.0.0.0/8", "fd00::/8", "127.0.0.1"]);
    expect(() => loadWebhooksSettings({ MAILROOM_WEBHOOK_ALLOW_NETWORKS: "10.0.0.0/8,intranet" })).toThrow(/MAILROOM_WEBHOOK_ALLOW_NETWORKS[\s\S]*intranet/);
    expect(() => parseAllowNetworks("10.0.0.0/33")).toThrow(/10.0.0.0\/33/);
  });

  it("judges a URL by its literal address or by every address its name resolves to", async () => {
    const lookup = tableLookup({ "hooks.acme.test": ["93.184.215.14"], "internal.acme.test": ["10.0.0.7"], "mixed.acme.test": ["93.184.215.14", "192.168.1.1"] });
    const policy = new NetworkPolicy([], lookup);
    expect(await policy.refusal("https://hooks.acme.test/x")).toBeUndefined();
    expect(await policy.refusal("https://internal.acme.test/x")).toBe("internal.acme.test resolves to 10.0.0.7, a private address");
    expect(await policy.refusal("https://mixed.acme.test/x")).toContain("192.168.1.1");
    expect(await policy.refusal("http://127.0.0.1:8222/varz")).toContain("loopback");
    expect(await policy.refusal("http://[::1]/x")).toContain("loopback");
    expect(await policy.refusal("http://[::ffff:10.0.0.1]/x")).toContain("private");
    expect(await policy.refusal("http://0x7f.1/x")).toContain("loopback"); // the URL parser normalises it to 127.0.0.1
    expect(await policy.refusal("http://169.254.169.254/latest/meta-data/")).toContain("link-local");
    // A name that does not resolve reaches nothing: accepted, and every delivery checks again.
    expect(await policy.refusal("https://nowhere.acme.test/x")).toBeUndefined();
    expect(await new NetworkPolicy(["10.0.0.0/8"], lookup).refusal("https://internal.acme.test/x")).toBeUndefined();
  });

  it("resolves localhost with the system's resolver to a loopback address and refuses it", async () => {
    expect(await new NetworkPolicy().refusal("http://localhost:9/x")).toMatch(/^localhost resolves to .*, a loopback address$/);
    expect(await new NetworkPolicy(LOOPBACK).refusal("http://localhost:9/x")).toBeUndefined();
  });
});

describe("the HTTP sender checks the address it connects to", () => {
  const hits: string[] = [];
  let server: http.Server;
  let port: number;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits.push(req.url ?? "");
      req.resume();
      if (req.url === "/redirect") res.writeHead(302, { location: `http://127.0.0.1:${port}/followed` }).end();
      else if (req.url === "/metadata") res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/" }).end();
      else res.writeHead(204).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const post = (sender: HttpWebhookSender, url: string) => sender.post(url, { "content-type": "application/json" }, "{}", 2_000);

  it("delivers to an allowed loopback receiver", async () => {
    const sender = new HttpWebhookSender(new NetworkPolicy(LOOPBACK));
    expect(await post(sender, `http://127.0.0.1:${port}/ok`)).toMatchObject({ statusCode: 204 });
    sender.close();
  });

  it("refuses literal and resolved non-public addresses before connecting, as a permanent failure", async () => {
    hits.length = 0;
    const sender = new HttpWebhookSender(new NetworkPolicy([], tableLookup({ "public.acme.test": ["127.0.0.1"] })));
    for (const url of [`http://127.0.0.1:${port}/a`, `http://[::ffff:127.0.0.1]:${port}/b`, `http://public.acme.test:${port}/c`, "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/"]) {
      const result = await post(sender, url);
      expect(result, url).toMatchObject({ statusCode: 0, permanent: true });
      expect(result.error, url).toMatch(/^refused: .*MAILROOM_WEBHOOK_ALLOW_NETWORKS/);
    }
    expect(hits).toEqual([]);
    sender.close();
  });

  it("connects to the address the checked lookup gave (a name that resolves to a trusted address gets its delivery)", async () => {
    hits.length = 0;
    // Stands for DNS rebinding: whatever the name resolved to at create, the connection uses this lookup's answer.
    const sender = new HttpWebhookSender(new NetworkPolicy(LOOPBACK, tableLookup({ "rebind.acme.test": ["127.0.0.1"] })));
    expect(await post(sender, `http://rebind.acme.test:${port}/named`)).toMatchObject({ statusCode: 204 });
    expect(hits).toEqual(["/named"]);
    sender.close();
  });

  it("does not follow redirects, to a private address or anywhere", async () => {
    hits.length = 0;
    const sender = new HttpWebhookSender(new NetworkPolicy(LOOPBACK));
    const toMetadata = await post(sender, `http://127.0.0.1:${port}/metadata`);
    expect(toMetadata).toMatchObject({ statusCode: 302 });
    expect(toMetadata.error).toMatch(/redirects are not followed/);
    expect((await post(sender, `http://127.0.0.1:${port}/redirect`)).statusCode).toBe(302);
    expect(hits).toEqual(["/metadata", "/redirect"]);
    sender.close();
  });
});
