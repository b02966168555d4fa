/**
 * A delivery process killed (SIGKILL) in the middle of a batch: every message still
 * arrives, and the only duplicates are messages that were inside an SMTP transaction
 * when the process died (at most the process's concurrency).
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { freePort, waitForPort } from "../harness/ports.js";
import { startSmtpSink, type SmtpSink } from "../harness/smtp-sink.js";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { compiledFrom } from "../../services/delivery/src/testing.js";
import { deliveryEnv, headerOf, listenEvents, publishJob, startNeighbours, tempDir, putContents, type Neighbours } from "./support.js";
import type { CompiledMessage } from "@mailroom/proto/renderer/v1/renderer_pb.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const CONCURRENCY = 8;
const JOBS = 200;

describe("delivery worker killed mid-batch", () => {
  const contents = new Map<string, CompiledMessage>();
  let nats: NatsHandle;
  let sink: SmtpSink;
  let neighbours: Neighbours;
  let nc: NatsConnection;
  let data: Awaited<ReturnType<typeof tempDir>>;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    [nats, sink, neighbours, data] = await Promise.all([startNats(), startSmtpSink(), startNeighbours(), tempDir("mailroom-crash-")]);
    contents.set("ws_acme/email:trs_1", compiledFrom({ subject: "Hi {{firstName}}", html: "<p>Hello {{firstName}}</p>", workspaceId: "ws_acme" }));
    neighbours.senders.set("ws_acme/news@acme.test", { address: "news@acme.test" });
    // A relay that takes a moment to answer, so a kill lands inside SMTP transactions.
    sink.setBehaviour(() => ({ kind: "accept", delayMs: 15 }));
    nc = await connectNats(nats.url, "crash-suite");
    await ensureMailStreams(nc);
    await putContents(nc, contents);
  });

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    await nc?.close();
    await Promise.all([nats?.stop(), sink?.stop(), neighbours?.stop()]);
    await data?.remove();
  });

  const startWorker = async (): Promise<ChildProcess> => {
    const port = await freePort();
    const env = deliveryEnv({
      natsUrl: nats.url, smtpUrl: sink.url, dataDir: data.dir, neighboursUrl: neighbours.url,
      extra: {
        MAILROOM_SERVICE_PORT: String(port),
        MAILROOM_DELIVERY_CONCURRENCY: String(CONCURRENCY),
        MAILROOM_DELIVERY_ACK_WAIT_MS: "2000",
        MAILROOM_SMTP_POOL_SIZE: "4",
        MAILROOM_LOG_LEVEL: "error",
      },
    });
    const child = spawn(process.execPath, ["--import", "tsx", "services/delivery/src/main.ts"], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "inherit", "inherit"],
    });
    children.push(child);
    await waitForPort(port, 20_000);
    return child;
  };

  it("delivers every message, duplicating at most what was in flight", async () => {
    const events = listenEvents(nc);
    const first = await startWorker();
    await Promise.all(
      Array.from({ length: JOBS }, (_, i) => publishJob(nc, { deliveryId: `dlv_crash_${i}`, to: `c${i}@example.test` })),
    );
    await sink.waitFor(60, 20_000);
    const exited = new Promise((r) => first.once("exit", r));
    first.kill("SIGKILL");
    await exited;
    const atKill = sink.messages.length;
    expect(atKill).toBeLessThan(JOBS); // the kill did land mid-batch

    const second = await startWorker();
    const deadline = Date.now() + 30_000;
    const distinct = () => new Set(sink.messages.map((m) => headerOf(m.raw, "X-Mailroom-Delivery-Id"))).size;
    while (distinct() < JOBS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(distinct()).toBe(JOBS);

    // Let any straggler redeliveries settle, then count.
    await new Promise((r) => setTimeout(r, 500));
    const duplicates = sink.messages.length - JOBS;
    console.info(`killed after ${atKill}/${JOBS} messages; ${duplicates} duplicate(s) (bound: ${CONCURRENCY} in flight)`);
    expect(duplicates).toBeGreaterThanOrEqual(0);
    expect(duplicates).toBeLessThanOrEqual(CONCURRENCY);
    // Every delivery reported an outcome.
    await events.waitFor((all) => new Set(all.filter((e) => e.type === 1).map((e) => e.deliveryId)).size === JOBS, 10_000);
    events.stop();

    const stopped = new Promise((r) => second.once("exit", r));
    second.kill("SIGTERM"); // graceful: stops pulling, closes the pool
    expect(await stopped).toBe(0);
  }, 60_000);

  it("on SIGTERM finishes what is in flight, hands back the rest, and exits cleanly: no duplicates", async () => {
    sink.setBehaviour(() => ({ kind: "accept", delayMs: 150 }));
    const ids = Array.from({ length: 40 }, (_, i) => `dlv_grace_${i}`);
    const mine = () => sink.messages.filter((m) => ids.includes(headerOf(m.raw, "X-Mailroom-Delivery-Id") ?? ""));
    const first = await startWorker();
    await Promise.all(ids.map((id, i) => publishJob(nc, { deliveryId: id, to: `g${i}@example.test` })));
    const deadline = Date.now() + 15_000;
    while (mine().length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const exited = new Promise<number | null>((r) => first.once("exit", (code) => r(code)));
    first.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(mine().length).toBeLessThan(ids.length);

    const second = await startWorker();
    const until = Date.now() + 30_000;
    while (new Set(mine().map((m) => headerOf(m.raw, "X-Mailroom-Delivery-Id"))).size < ids.length && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(new Set(mine().map((m) => headerOf(m.raw, "X-Mailroom-Delivery-Id"))).size).toBe(ids.length);
    expect(mine()).toHaveLength(ids.length);
    second.kill("SIGTERM");
  }, 60_000);
});
