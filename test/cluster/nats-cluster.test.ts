/**
 * Mailroom on a 3-node NATS cluster with every stream replicated 3 times: one node is lost
 * (SIGKILL, the stream leader of the delivery jobs) while 5,000 emails go through the public
 * API, and every email still reaches the SMTP relay, with duplicates bounded by what was in
 * flight when the node died.
 *
 * The emails are sent through the real gateway's batch endpoint (50 per request, a few
 * requests at once), not published to JetStream directly.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { connectNats, openKvBucket, type NatsConnection } from "@mailroom/kit/jetstream.js";
import { DELIVERY_STREAM } from "@mailroom/pipeline/subjects.js";
import { startSystem, type TestSystem } from "../harness/system.js";
import { checkReadiness, processReadyChecks } from "@mailroom/kit/health.js";
import { sampleSum, scrape } from "../ops/prometheus.js";
import { natsServerAvailable, startNatsCluster, type NatsCluster } from "./nats-cluster.js";

const KEY = "mr_test_cluster_key_1";
const TOTAL = 5_000;
const PER_REQUEST = 50;
const REQUESTS_AT_ONCE = 4;
/** Jobs one delivery process handles at once: what may be mid-send when the node dies. */
const DELIVERY_CONCURRENCY = 64;

const available = natsServerAvailable();
if (!available) console.log("test/cluster: nats-server not found; the NATS cluster suite is skipped");

describe.skipIf(!available)("a 3-node NATS cluster losing a node under load", () => {
  let cluster: NatsCluster;
  let sys: TestSystem;
  let nc: NatsConnection;

  beforeAll(async () => {
    cluster = await startNatsCluster(3);
    nc = await connectNats(cluster.url, "cluster-test");
    sys = await startSystem({
      bootstrap: {
        workspaces: [{
          id: "ws_cluster", name: "Cluster", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          monthlyLimit: 1_000_000, sendingAccountNew: false,
        }],
      },
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
      env: {
        MAILROOM_NATS_URL: cluster.url,
        MAILROOM_NATS_REPLICAS: "3",
        MAILROOM_LOG_LEVEL: "warn",
        MAILROOM_DELIVERY_CONCURRENCY: String(DELIVERY_CONCURRENCY),
        // A job whose ack died with the node comes back after the ack wait: keep it short here.
        MAILROOM_SMTP_TIMEOUT_MS: "5000",
        MAILROOM_DELIVERY_ACK_WAIT_MS: "10000",
      },
    });
    // The KV buckets the units made (delivery's pacing, the gateway's rate limits) are raised to 3
    // replicas, as kit's openKvBucket does for a unit that opens its bucket through it.
    const jsm = await jetstreamManager(nc);
    for await (const stream of jsm.streams.list()) {
      if (stream.config.name.startsWith("KV_") && stream.config.num_replicas !== 3) {
        await jsm.streams.update(stream.config.name, { ...stream.config, num_replicas: 3 });
        // Writes wait for the new replicas to catch up.
        await waitFor(async () => (await jsm.streams.info(stream.config.name)).cluster?.replicas?.filter((r) => r.current).length === 2, 20_000);
      }
    }
  }, 90_000);

  afterAll(async () => {
    await sys?.stop();
    await nc?.close();
    await cluster?.stop();
  });

  it("replicates the streams on every node", async () => {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(DELIVERY_STREAM);
    expect(info.config.num_replicas).toBe(3);
    expect(info.cluster?.replicas).toHaveLength(2);
  });

  it("connects through MAILROOM_NATS_URL's list when a member is unreachable, and reports the connection ready", async () => {
    const listed = await connectNats(`nats://127.0.0.1:1, ${cluster.nodes[1].url}`, "cluster-list-test");
    try {
      await listed.flush();
      const mine = processReadyChecks().filter((c) => c.name === "nats:cluster-list-test");
      expect(await checkReadiness(mine)).toEqual({ ok: true, checks: { "nats:cluster-list-test": "ok" } });
    } finally {
      await listed.close();
    }
    // A closed connection is no longer checked.
    await new Promise((r) => setTimeout(r, 50));
    expect(processReadyChecks().filter((c) => c.name === "nats:cluster-list-test")).toEqual([]);
  });

  it("opens a KV bucket with the configured replicas, raising one made with fewer", async () => {
    const made = await openKvBucket(nc, "mailroom_cluster_test", { history: 1 }, 1);
    expect((await made.status()).replicas).toBe(1);
    const raised = await openKvBucket(nc, "mailroom_cluster_test", { history: 1 }, 3);
    expect((await raised.status()).replicas).toBe(3);
  });

  it("delivers every email when a node dies mid-send", async () => {
    const jsm = await jetstreamManager(nc);
    const leader = (await jsm.streams.info(DELIVERY_STREAM)).cluster?.leader;
    const victim = cluster.nodes.find((n) => n.name === leader) ?? cluster.nodes[0];

    const started = Date.now();
    // Messages at the sink every 5 s, for the log line.
    const progress: number[] = [];
    const sampler = setInterval(() => progress.push(sys.sink!.messages.length), 5_000);
    const batches = Array.from({ length: TOTAL / PER_REQUEST }, (_, b) =>
      Array.from({ length: PER_REQUEST }, (_, i) => ({
        from: "Acme <team@acme.test>",
        to: `user${b * PER_REQUEST + i}@example.test`,
        subject: `Cluster ${b * PER_REQUEST + i}`,
        html: "<p>Hello</p>",
      })),
    );
    let next = 0;
    let killed: Promise<void> | undefined;
    let rateLimited = 0;
    let failed = 0;
    let firstFailure = "";
    const sender = async () => {
      for (;;) {
        const b = next++;
        if (b >= batches.length) return;
        // A third of the way in: the delivery stream's leader goes.
        if (b === Math.floor(batches.length / 3)) killed = victim.kill();
        let res = await sys.api("POST", "/v1/emails/batch", { key: KEY, body: { emails: batches[b] } });
        // The gateway's token buckets live in JetStream KV: while the lost node's KV leader is
        // replaced, a take may lose its compare-and-set (429) or fail (500), before anything is
        // sent. A client retries; a retry of a batch that was in fact accepted shows as duplicates.
        for (let tries = 0; (res.status === 429 || res.status >= 500) && tries < 20; tries++) {
          if (res.status === 429) rateLimited++;
          else {
            failed++;
            firstFailure ||= `${res.status} ${JSON.stringify(res.body).slice(0, 200)} (gateway: ${(await sys.log("gateway", 200)).split("\n").filter((l) => l.includes('"level":50')).pop()?.slice(0, 400) ?? "no error logged"})`;
          }
          await new Promise((r) => setTimeout(r, 1_000 * Number(res.headers.get("retry-after") ?? 1)));
          res = await sys.api("POST", "/v1/emails/batch", { key: KEY, body: { emails: batches[b] } });
        }
        if (res.status !== 200) {
          throw new Error(`batch ${b}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}\n--- gateway log ---\n${await sys.log("gateway", 15)}\n--- email log ---\n${await sys.log("email", 15)}`);
        }
        expect(res.body.emails.failed).toEqual([]);
      }
    };
    await Promise.all(Array.from({ length: REQUESTS_AT_ONCE }, sender));
    await killed;
    const accepted = Date.now() - started;

    const delivered = () => new Set(sys.sink!.messages.flatMap((m) => m.to));
    // The send path queues all 5,000 within seconds, so a third of the way in the failover
    // refuses thousands of publishes; they wait in the email service's outbox until the
    // scheduler publishes them again, 64 at a time (one at a time, that drain took 50–90 s).
    // Even so a busy runner has taken 60 s (the delivery then pulls slowly after the leader
    // change; see the closing note of issue 14's session), hence the room.
    await expect
      .poll(() => delivered().size, { timeout: 150_000, interval: 500 })
      .toBe(TOTAL)
      .catch(async (err) => {
        throw new Error(`${err.message}\n--- email log ---\n${await sys.log("email")}\n--- delivery log ---\n${await sys.log("delivery")}`);
      });
    clearInterval(sampler);
    const duplicates = sys.sink!.messages.length - TOTAL;
    // What the delivery process's own metrics say about the run.
    const metrics = await scrape(`http://127.0.0.1:${sys.ports.delivery}`);
    const jobs = { stream: DELIVERY_STREAM };
    const handled = ["ack", "nak", "term"].map((result) => `${result} ${sampleSum(metrics, "mailroom_jetstream_messages_handled_total", { ...jobs, result })}`).join(", ");
    const handlerMs = (1000 * sampleSum(metrics, "mailroom_jetstream_handler_duration_seconds_sum", jobs)) / sampleSum(metrics, "mailroom_jetstream_handler_duration_seconds_count", jobs);
    console.log(`test/cluster: ${TOTAL} emails accepted in ${accepted} ms, all delivered after ${Date.now() - started} ms; node ${victim.name} killed; ${duplicates} duplicates; ${rateLimited} batch requests answered 429 and ${failed} 5xx, retried${firstFailure ? ` (first 5xx: ${firstFailure})` : ""}; delivered every 5 s: ${progress.join(" ")}; delivery jobs ${handled}, ${sampleSum(metrics, "mailroom_jetstream_redeliveries_total", jobs)} redeliveries, ${handlerMs.toFixed(0)} ms per job`);
    expect(duplicates).toBeLessThanOrEqual(DELIVERY_CONCURRENCY);
  }, 300_000);
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not true within ${timeoutMs} ms: ${condition}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
