/** Wiring only: config → accounts and email clients → SMTP listeners. */
import { startTracing } from "@mailroom/kit/tracing.js";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { EmailService } from "@mailroom/proto/email/v1/email_pb.js";
import { connectClient, connectNats, createLogger, loadConfig, onShutdown, startConnectServer } from "@mailroom/kit";
import { AddressAttempts } from "@mailroom/kit/token-bucket.js";
import { ApiKeys } from "./auth.js";
import { KeyRateLimit } from "./rate-limit.js";
import { loadSubmissionSettings } from "./settings.js";
import { startSubmissionListener } from "./smtp.js";
import { Submitter } from "./submit.js";

const config = loadConfig();
const settings = loadSubmissionSettings();
const logger = createLogger("submission", config.logLevel);
// Spans exported when OTEL_EXPORTER_OTLP_ENDPOINT is set (the OTEL_* variables); else off.
await startTracing("submission");
// NATS only for the per-key rate limit the gateway shares (its KV bucket).
const nc = await connectNats(config.natsUrl, "submission");

const smtp = await startSubmissionListener({
  keys: new ApiKeys(connectClient(AccountsService, config.urls.accounts), settings.authCacheMs),
  failures: new AddressAttempts(settings.authFailuresPerMinute),
  rateLimit: await KeyRateLimit.open(nc, settings.rateLimitPerMinute, settings.rateLimitBurst),
  submitter: new Submitter(connectClient(EmailService, config.urls.email), logger),
  host: settings.host ?? config.serviceHost,
  port: settings.port,
  tls: settings.tls && { cert: settings.tls.cert, key: settings.tls.key, port: settings.tlsPort },
  maxMessageBytes: settings.maxMessageBytes,
  logger,
});
logger.info(
  { port: smtp.port, tlsPort: smtp.tlsPort, host: settings.host ?? config.serviceHost, starttls: Boolean(settings.tls), maxMessageBytes: settings.maxMessageBytes },
  "SMTP submission listening",
);

// /healthz, /readyz and /metrics, when given a port (no RPCs of its own).
const healthPort = settings.healthPort ?? config.servicePort;
const health =
  healthPort === undefined
    ? undefined
    : await startConnectServer({ routes: () => {}, port: healthPort, host: config.serviceHost, logger, healthy: () => !nc.isClosed() });

onShutdown(logger, async () => {
  await smtp.close();
  await health?.close();
  await nc.drain();
});
