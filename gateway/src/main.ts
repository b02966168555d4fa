import { startTracing } from "@mailroom/kit/tracing.js";
import { loadConfig, createLogger, onShutdown, connectNats } from "@mailroom/kit";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { buildGateway } from "./app.js";
import { createServiceClients } from "@mailroom/http/deps.js";
import { natsTrackingEvents } from "./tracking-events.js";
import { KvTokenBuckets, keyBucketIdleMs } from "@mailroom/kit/kv-token-buckets.js";
import { loadGatewaySettings } from "@mailroom/http/settings.js";

const config = loadConfig();
const settings = loadGatewaySettings(config);
const logger = createLogger("gateway", config.logLevel);
// Spans exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the OTEL_* variables); else off.
await startTracing("gateway");
// Every API request takes a rate-limit token over KV: no stack captured per request.
const nc = await connectNats(config.natsUrl, "gateway", { noAsyncTraces: true });
await ensureMailStreams(nc);

const app = await buildGateway({
  config,
  logger,
  clients: createServiceClients(config),
  tracking: natsTrackingEvents(nc),
  rateLimitPerMinute: settings.rateLimitPerMinute,
  rateLimitBurst: settings.rateLimitBurst,
  // Shared by every gateway process; an idle key's entry expires once it would be full again.
  rateLimitBuckets: await KvTokenBuckets.open(nc, { idleMs: keyBucketIdleMs(settings.rateLimitPerMinute, settings.rateLimitBurst) }),
  authFailuresPerMinute: settings.authFailuresPerMinute,
  authCacheMs: settings.authCacheMs,
  errorDocsUrl: settings.errorDocsUrl,
  httpHost: settings.httpHost,
  capturesMail: settings.capturesMail,
  consoleSignIn: { oidc: settings.oidc, systemSender: settings.systemSender },
});
await app.listen({ port: config.httpPort, host: settings.httpHost });
logger.info({ url: `http://${settings.httpHost}:${config.httpPort}` }, "gateway listening");

onShutdown(logger, async () => {
  await app.close();
  await nc.drain();
});
