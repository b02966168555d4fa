/**
 * Server-side request forgery (DESIGN.md §9.2, issue 26): the webhooks unit started
 * in-process twice on a real nats-server — once trusting no network (production's default),
 * once trusting loopback as `npm start` does — refuses webhook URLs that are or resolve to
 * non-public addresses at create and update (400 webhook_url_not_allowed), checks again at
 * delivery, and never follows a redirect.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectError } from "@connectrpc/connect";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { connectClient, createLogger, errorInfoOf, loadConfig } from "@mailroom/kit";
import { startWebhooks, type RunningWebhooks } from "../../services/webhooks/src/main.js";
import { loadWebhooksSettings } from "../../services/webhooks/src/settings.js";
import { DeliveryState, WebhookService, WebhookStatus } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";

type Client = ReturnType<typeof connectClient<typeof WebhookService>>;

let nats: NatsHandle;
const dirs: string[] = [];
const units: RunningWebhooks[] = [];
let strict: Client;
let trusting: Client;
let receiver: http.Server;
let receiverUrl: string;
const hits: string[] = [];

async function startUnit(allow: string | undefined): Promise<Client> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mailroom-webhooks-ssrf-"));
  dirs.push(dataDir);
  const env: Record<string, string> = {
    MAILROOM_NATS_URL: nats.url,
    MAILROOM_DATA_DIR: dataDir,
    MAILROOM_SERVICE_PORT: "0",
    MAILROOM_WEBHOOKS_POLL_MS: "50",
    MAILROOM_WEBHOOKS_RETRY_BASE_MS: "60000",
    MAILROOM_WEBHOOKS_TIMEOUT_MS: "3000",
    ...(allow !== undefined ? { MAILROOM_WEBHOOK_ALLOW_NETWORKS: allow } : {}),
  };
  const unit = await startWebhooks(loadConfig(env), loadWebhooksSettings(env), createLogger("webhooks", "warn"));
  units.push(unit);
  return connectClient(WebhookService, unit.url);
}

beforeAll(async () => {
  nats = await startNats();
  receiver = http.createServer((req, res) => {
    hits.push(req.url ?? "");
    req.resume();
    req.on("end", () => {
      if (req.url === "/to-metadata") res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/" }).end();
      else if (req.url === "/to-private") res.writeHead(302, { location: "http://10.0.0.1/hook" }).end();
      else res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  strict = await startUnit(undefined);
  trusting = await startUnit("127.0.0.0/8,::1/128");
});

afterAll(async () => {
  for (const unit of units) await unit.stop();
  await new Promise<void>((r) => {
    receiver.close(() => r());
    receiver.closeAllConnections();
  });
  await nats?.stop();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function refusal(p: Promise<unknown>) {
  try {
    await p;
  } catch (err) {
    return errorInfoOf(ConnectError.from(err));
  }
  throw new Error("expected a refusal");
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function settledDelivery(client: Client, workspaceId: string, webhookId: string) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { deliveries } = await client.listDeliveries({ workspaceId, webhookId });
    const d = deliveries[0];
    if (d && d.state !== DeliveryState.PENDING) return d;
    if (d && d.attempts > 0) return d;
    if (Date.now() > deadline) throw new Error("timed out waiting for the delivery");
    await sleep(25);
  }
}

const PRIVATE_URLS = [
  "http://127.0.0.1:8222/varz",
  "http://10.0.0.1/hook",
  "http://169.254.169.254/latest/meta-data/",
  "http://[::1]:4222/",
  "http://[::ffff:10.0.0.1]/hook",
  "http://[::ffff:127.0.0.1]:8080/hook",
  "http://localhost:8080/hook",
];

describe("webhook targets (server-side request forgery)", () => {
  it("refuses loopback, private, link-local and IPv4-mapped targets and names resolving to them, at create and update", async () => {
    for (const url of PRIVATE_URLS) {
      const info = await refusal(strict.createWebhook({ workspaceId: "ws_ssrf", url, events: ["EMAIL_SENT"] }));
      expect([info?.code, info?.httpStatus], url).toEqual(["webhook_url_not_allowed", 400]);
      expect(info?.message, url).toMatch(/^url is not allowed: .*(loopback|private|link-local)/);
    }
    // A public-looking name that does not resolve here is accepted (each delivery checks what it connects to).
    const { webhook } = await strict.createWebhook({ workspaceId: "ws_ssrf", url: "https://hooks.example.invalid/mailroom", events: ["EMAIL_SENT"] });
    const info = await refusal(strict.updateWebhook({ workspaceId: "ws_ssrf", id: webhook!.id, url: "http://169.254.169.254/latest/meta-data/" }));
    expect(info?.code).toBe("webhook_url_not_allowed");
    expect((await strict.getWebhook({ workspaceId: "ws_ssrf", id: webhook!.id })).webhook?.url).toBe("https://hooks.example.invalid/mailroom");
  });

  it("accepts what MAILROOM_WEBHOOK_ALLOW_NETWORKS trusts, and only that; the trusted loopback receiver gets its delivery", async () => {
    for (const url of ["http://[::1]:4222/", "http://localhost:8080/hook", "http://[::ffff:127.0.0.1]:8080/hook"]) {
      expect((await trusting.createWebhook({ workspaceId: "ws_ok", url, events: ["EMAIL_SENT"] })).webhook?.url, url).toBe(url);
    }
    for (const url of ["http://10.0.0.1/hook", "http://169.254.169.254/latest/meta-data/", "http://[::ffff:10.0.0.1]/hook"]) {
      expect((await refusal(trusting.createWebhook({ workspaceId: "ws_ok", url, events: ["EMAIL_SENT"] })))?.code, url).toBe("webhook_url_not_allowed");
    }
    const { webhook } = await trusting.createWebhook({ workspaceId: "ws_ok2", url: `${receiverUrl}/ok`, events: ["EMAIL_SENT"] });
    expect(webhook?.status).toBe(WebhookStatus.ACTIVE);
    await trusting.sendTestEvent({ workspaceId: "ws_ok2", id: webhook!.id });
    const d = await settledDelivery(trusting, "ws_ok2", webhook!.id);
    expect(d.state).toBe(DeliveryState.SUCCEEDED);
    expect(hits).toContain("/ok");
  });

  it("does not follow a redirect to a private address: the delivery fails, saying why, and nothing else is called", async () => {
    for (const target of ["/to-metadata", "/to-private"]) {
      const { webhook } = await trusting.createWebhook({ workspaceId: `ws_redirect${target}`, url: `${receiverUrl}${target}`, events: ["EMAIL_SENT"] });
      await trusting.sendTestEvent({ workspaceId: `ws_redirect${target}`, id: webhook!.id });
      const d = await settledDelivery(trusting, `ws_redirect${target}`, webhook!.id);
      expect(d.state, target).not.toBe(DeliveryState.SUCCEEDED);
      expect(d.lastAttempt?.statusCode, target).toBe(302);
      expect(d.lastAttempt?.error, target).toMatch(/redirects are not followed/);
    }
    expect(hits.filter((h) => h.startsWith("/to-"))).toEqual(["/to-metadata", "/to-private"]);
  });
});
