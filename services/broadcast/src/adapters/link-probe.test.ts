import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { NetworkPolicy } from "@mailroom/kit/network-policy.js";
import { HttpLinkProbe, mapLimited } from "./link-probe.js";

/** The pre-send check's link fetcher against a real HTTP server on port 0. */
describe("HttpLinkProbe", () => {
  let server: http.Server;
  let port = 0;
  let base = "";
  const hits: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`);
      const url = req.url ?? "/";
      if (url === "/ok") return res.writeHead(200).end("ok");
      if (url === "/a") return res.writeHead(302, { location: "/b" }).end();
      if (url === "/b") return res.writeHead(307, { location: `${base}/ok` }).end();
      if (url === "/loop") return res.writeHead(302, { location: "/loop" }).end();
      if (url === "/to-private") return res.writeHead(302, { location: "http://10.1.2.3/admin" }).end();
      if (url === "/head-405") return res.writeHead(req.method === "HEAD" ? 405 : 200).end();
      if (url === "/hang") return; // never answers
      if (url.startsWith("/slow/")) {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        setTimeout(() => {
          inFlight--;
          res.writeHead(200).end();
        }, 60);
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    hits.length = 0;
  });

  const trusting = (options = {}) => new HttpLinkProbe(new NetworkPolicy(["127.0.0.0/8"]), options);

  it("follows redirects (relative and absolute) to the final answer, and falls back to GET when HEAD is refused", async () => {
    const probe = trusting();
    const [chain, head405, missing] = await probe.check([`${base}/a`, `${base}/head-405`, `${base}/missing`]);
    expect(chain).toEqual({ url: `${base}/a`, status: 200, redirects: [{ status: 302, location: `${base}/b` }, { status: 307, location: `${base}/ok` }], finalUrl: `${base}/ok` });
    expect(head405).toEqual({ url: `${base}/head-405`, status: 200, redirects: [], finalUrl: `${base}/head-405` });
    expect(missing).toMatchObject({ status: 404, redirects: [] });
    expect(hits.filter((h) => h.endsWith("/head-405"))).toEqual(["HEAD /head-405", "GET /head-405"]);
    probe.close();
  });

  it("refuses loopback (by address and by name) and private targets without a request, redirects to them included", async () => {
    const probe = new HttpLinkProbe(new NetworkPolicy());
    const [literal, byName] = await probe.check([`${base}/ok`, `http://localhost:${port}/ok`]);
    expect(literal).toMatchObject({ status: 0, refused: true, error: expect.stringContaining("loopback") });
    expect(byName).toMatchObject({ status: 0, refused: true, error: expect.stringMatching(/localhost resolves to .*loopback/) });
    expect(hits).toEqual([]);
    const [redirected] = await trusting().check([`${base}/to-private`]);
    expect(redirected).toMatchObject({ status: 302, refused: true, redirects: [{ status: 302, location: "http://10.1.2.3/admin" }], finalUrl: "http://10.1.2.3/admin", error: expect.stringContaining("private") });
    probe.close();
  });

  it("bounds a link's time and its redirects", async () => {
    const probe = trusting({ timeoutMs: 300, maxRedirects: 3 });
    const started = Date.now();
    const [hung, loop] = await probe.check([`${base}/hang`, `${base}/loop`]);
    expect(hung).toMatchObject({ status: 0, error: "timed out after 300 ms" });
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(loop).toMatchObject({ status: 302, error: "more than 3 redirects" });
    expect(loop.redirects).toHaveLength(4);
    probe.close();
  });

  it("fetches a few at a time, and answers a link again from its cache", async () => {
    const probe = trusting({ concurrency: 4 });
    maxInFlight = 0;
    const urls = Array.from({ length: 12 }, (_, i) => `${base}/slow/${i}`);
    const results = await probe.check(urls);
    expect(results.map((r) => r.url)).toEqual(urls);
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(maxInFlight).toBeGreaterThan(1);
    expect(maxInFlight).toBeLessThanOrEqual(4);
    const before = hits.length;
    await probe.check([urls[0], urls[5]]);
    expect(hits.length).toBe(before);
    probe.close();
  });

  it("starts no link once the check's time for links has run out, reporting those unchecked (and not caching them)", async () => {
    const probe = trusting({ concurrency: 1, budgetMs: 30 });
    const [first, second, third] = await probe.check([`${base}/slow/x`, `${base}/slow/y`, `${base}/slow/z`]);
    expect(first).toMatchObject({ status: 200 });
    expect(second).toMatchObject({ status: 0, unchecked: true, error: expect.stringContaining("not checked") });
    expect(third).toMatchObject({ unchecked: true });
    expect(hits.filter((h) => h.startsWith("HEAD /slow/"))).toEqual(["HEAD /slow/x"]);
    const [again] = await trusting().check([`${base}/slow/y`]);
    expect(again).toMatchObject({ status: 200 });
    probe.close();
  });

  it("mapLimited keeps the order and the limit", async () => {
    let running = 0;
    let most = 0;
    const out = await mapLimited([5, 1, 4, 2, 3], 2, async (n) => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, n * 5));
      running--;
      return n * 10;
    });
    expect(out).toEqual([50, 10, 40, 20, 30]);
    expect(most).toBe(2);
  });
});
