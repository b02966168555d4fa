/**
 * Delivery's Prometheus metrics, on the process registry kit serves at /metrics. The delivery
 * code calls these functions where the things happen (see each one); labels are bounded: the
 * lane (e.g. transactional / broadcast), the outcome, the route (named by the operator) and the
 * destination domain (capped at DOMAIN_LABELS), never an address or an id.
 */
import { counter, gauge, histogram } from "@mailroom/kit/metrics.js";

/** What became of one SMTP attempt (a deferral is retried later; the other three are final). */
export type DeliveryOutcome = "sent" | "deferred" | "bounced" | "failed";

const outcomes = counter("mailroom_delivery_messages_total", "Delivery attempts by lane and outcome (sent, deferred, bounced, failed).", ["lane", "outcome"]);
const sendSeconds = histogram(
  "mailroom_delivery_send_duration_seconds",
  "Time of one SMTP transaction (queueing for a pooled connection included), by lane.",
  ["lane"],
  [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
);
const poolInUse = gauge("mailroom_delivery_smtp_connections_in_use", "SMTP transactions running on the pool now (at most the pool size).");
const poolSize = gauge("mailroom_delivery_smtp_pool_size", "Pooled SMTP connections allowed (MAILROOM_SMTP_POOL_SIZE).");

/**
 * Labelled children by label values, made once: prom-client checks a label set on every call
 * made with one, which per message was a percent of delivery's CPU. Lanes and outcomes are few.
 */
function memo<T>(make: (key: string) => T): (key: string) => T {
  const made = new Map<string, T>();
  return (key) => {
    let child = made.get(key);
    if (child === undefined) made.set(key, (child = make(key)));
    return child;
  };
}
const outcomeCounter = memo((key) => {
  const [lane, outcome] = key.split("\u0000");
  return outcomes.labels({ lane, outcome });
});
const sendTimer = memo((lane) => sendSeconds.labels({ lane }));

/** Call once per attempt with its outcome (where the deliverer counts sent/deferred/bounced/failed). */
export function recordDeliveryOutcome(lane: string, outcome: DeliveryOutcome): void {
  outcomeCounter(`${lane}\u0000${outcome}`).inc();
}

/**
 * Call when an SMTP transaction starts (around `transport.send`); call the returned function
 * when it ends, whatever the result. Times the send and tracks the pool's use.
 */
export function startSmtpSend(lane: string): () => void {
  poolInUse.inc();
  const stop = sendTimer(lane).startTimer();
  let done = false;
  return () => {
    if (done) return;
    done = true;
    poolInUse.dec();
    stop();
  };
}

/** Call once when the SMTP pool is built, with its size. */
export function recordSmtpPoolSize(size: number): void {
  poolSize.set(size);
}

// ---------- routes (DESIGN §9.7) ----------

const routeOutcomes = counter(
  "mailroom_delivery_route_messages_total",
  "Delivery attempts by route, destination domain (the first 200 seen; the rest \"other\") and outcome.",
  ["route", "domain", "outcome"],
);
const routeSeconds = histogram(
  "mailroom_delivery_route_send_duration_seconds",
  "Time to send one message by route and destination domain (a failover to another route included).",
  ["route", "domain"],
  [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
);
// A route one worker marked down reads as down.
const routeUp = gauge("mailroom_delivery_route_up", "1 while a delivery route takes traffic, 0 while it is marked down.", ["route"], undefined, "min");

/** Distinct destination domains given a label of their own; later ones share "other". */
export const DOMAIN_LABELS = 200;
const labelledDomains = new Set<string>();

/** The domain's label: itself while fewer than DOMAIN_LABELS domains were seen, else "other" (cardinality stays bounded). */
export function domainLabel(domain: string): string {
  if (!domain) return "other";
  if (labelledDomains.has(domain)) return domain;
  if (labelledDomains.size >= DOMAIN_LABELS) return "other";
  labelledDomains.add(domain);
  return domain;
}

const routeOutcomeCounter = memo((key) => {
  const [route, domain, outcome] = key.split("\u0000");
  return routeOutcomes.labels({ route, domain, outcome });
});
const routeTimer = memo((key) => {
  const [route, domain] = key.split("\u0000");
  return routeSeconds.labels({ route, domain });
});

/** Call once per attempt with the route that carried it (or tried last) and the recipient's domain. */
export function recordRouteOutcome(route: string, domain: string, outcome: DeliveryOutcome, seconds: number): void {
  const label = domainLabel(domain);
  routeOutcomeCounter(`${route}\u0000${label}\u0000${outcome}`).inc();
  routeTimer(`${route}\u0000${label}`).observe(seconds);
}

/** Call when a route is built (up) and whenever it goes down or comes back. */
export function recordRouteHealth(route: string, up: boolean): void {
  routeUp.labels({ route }).set(up ? 1 : 0);
}

/**
 * The same functions as one object, for the domain to receive as a port (declare
 * `interface DeliveryMetrics { outcome(lane, outcome): void; sendStarted(lane): () => void }` in
 * domain/ports.ts; the domain must not import this adapter).
 */
export const prometheusDeliveryMetrics = {
  outcome: recordDeliveryOutcome,
  sendStarted: startSmtpSend,
  routeOutcome: recordRouteOutcome,
};
