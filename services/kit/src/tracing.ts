/**
 * Traces (DESIGN §9.10): W3C trace context across HTTP, Connect calls and NATS message
 * headers, spans exported with OTLP/HTTP, configured by the standard OTEL_* variables.
 *
 * Off unless an exporter is configured, and off means off: the SDK is not even loaded, and
 * every helper here checks one module variable and calls straight through, so the send path
 * pays no span objects, no context switches and no AsyncLocalStorage (measured in
 * `npm run bench api`, docs/operations.md "Traces").
 *
 * Spans name things by id only (request, email, broadcast, delivery, contact ids): no API key,
 * message content or recipient address goes into a span name or attribute.
 */
import { randomUUID } from "node:crypto";
import {
  context,
  propagation,
  trace,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type TextMapGetter,
  type TextMapSetter,
  type Tracer,
} from "@opentelemetry/api";
import { z } from "zod";
import { loadSettings } from "./config.js";
import { requestContext } from "./request-context.js";

export { SpanKind, type Attributes, type Link, type Span };

/** The span attribute that carries the request id (x-request-id) on every span made for it. */
export const REQUEST_ID_ATTRIBUTE = "mailroom.request_id";
/** NATS header that carries the request id beside `traceparent`, for the consumer's span. */
export const REQUEST_ID_HEADER = "Mailroom-Request-Id";

const EXPORTERS = ["otlp", "console", "none"] as const;

/** A URL variable where empty means unset (compose files pass `${VAR:-}`). */
const optionalUrl = z.preprocess((v) => (v === "" ? undefined : v), z.string().url().optional());

const schema = z
  .object({
    OTEL_SDK_DISABLED: z.string().optional(),
    OTEL_TRACES_EXPORTER: z.string().optional(),
    OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalUrl,
    OTEL_EXPORTER_OTLP_PROTOCOL: z.string().optional(),
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z.string().optional(),
    OTEL_SERVICE_NAME: z.string().optional(),
    /** Store operations slower than this get a span (faster ones are only in the metrics). */
    MAILROOM_TRACE_STORE_THRESHOLD_MS: z.coerce.number().min(0).max(60_000).default(10),
  })
  .transform((env, ctx) => {
    const fail = (variable: string, message: string) => {
      ctx.addIssue({ code: "custom", path: [variable], message });
      return z.NEVER;
    };
    const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
    // The OpenTelemetry default is "otlp"; here an exporter with nowhere to send is no exporter:
    // unset, tracing is off (DESIGN §9.10).
    const names = env.OTEL_TRACES_EXPORTER ? env.OTEL_TRACES_EXPORTER.split(",").map((s) => s.trim().toLowerCase()).filter(Boolean) : endpoint ? ["otlp"] : [];
    for (const name of names) {
      if (!(EXPORTERS as readonly string[]).includes(name)) return fail("OTEL_TRACES_EXPORTER", `"${name}" is not one of ${EXPORTERS.join(", ")}`);
    }
    if (names.includes("otlp") && !endpoint) return fail("OTEL_TRACES_EXPORTER", "otlp needs OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)");
    const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || "http/protobuf").trim();
    const protocolVariable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
    if (protocol !== "http/protobuf" && protocol !== "http/json") {
      return fail(protocolVariable, `"${protocol}" is not supported: use http/protobuf (the default) or http/json`);
    }
    const disabled = ["true", "1"].includes((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase());
    const exporters = disabled ? [] : (names.filter((n) => n !== "none") as ("otlp" | "console")[]);
    return {
      exporters: names.includes("none") ? [] : exporters,
      protocol: protocol as "http/protobuf" | "http/json",
      servicePrefix: env.OTEL_SERVICE_NAME?.trim() || "mailroom",
      storeThresholdMs: env.MAILROOM_TRACE_STORE_THRESHOLD_MS,
    };
  });

export type TracingSettings = z.output<typeof schema>;

/** The tracing settings of the environment; a mistake throws a ConfigError naming the variable. */
export function loadTracingSettings(env: NodeJS.ProcessEnv = process.env): TracingSettings {
  return loadSettings(schema, env);
}

let tracer: Tracer | undefined;
let shutdown: (() => Promise<void>) | undefined;
let storeThresholdMs = Number.POSITIVE_INFINITY;

/** Whether spans are being recorded in this process. */
export const tracingOn = (): boolean => tracer !== undefined;

/** Store operations at least this slow get a span (infinite while tracing is off). */
export const slowStoreOperationMs = (): number => storeThresholdMs;

/**
 * Starts tracing for one unit when the environment configures an exporter; a no-op otherwise.
 * The unit's service.name is `mailroom-<unit>` (OTEL_SERVICE_NAME replaces the `mailroom`
 * prefix: one environment often starts every unit). OTEL_RESOURCE_ATTRIBUTES, the sampler
 * (OTEL_TRACES_SAMPLER), the batch processor (OTEL_BSP_*) and the exporter's endpoint, headers,
 * timeout and compression (OTEL_EXPORTER_OTLP_*) are read by the SDK as the specification says.
 */
export async function startTracing(unit: string): Promise<boolean> {
  // process.env, not a given environment: the SDK's parts read their OTEL_* variables there.
  const settings = loadTracingSettings(process.env);
  if (tracer || settings.exporters.length === 0) return tracingOn();
  // Loaded only when used: a process without traces never pays for the SDK.
  const [{ NodeTracerProvider, BatchSpanProcessor, ConsoleSpanExporter }, resources] = await Promise.all([
    import("@opentelemetry/sdk-trace-node"),
    import("@opentelemetry/resources"),
  ]);
  const exporters = await Promise.all(
    settings.exporters.map(async (name) => {
      if (name === "console") return new ConsoleSpanExporter();
      const { OTLPTraceExporter } =
        settings.protocol === "http/json" ? await import("@opentelemetry/exporter-trace-otlp-http") : await import("@opentelemetry/exporter-trace-otlp-proto");
      return new OTLPTraceExporter();
    }),
  );
  const detected = resources.detectResources({ detectors: [resources.envDetector] });
  const resource = detected.merge(
    resources.resourceFromAttributes({
      "service.name": `${settings.servicePrefix}-${unit}`,
      "service.namespace": settings.servicePrefix,
      "service.instance.id": randomUUID(),
    }),
  );
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [requestIdProcessor, ...exporters.map((e) => new BatchSpanProcessor(e))],
  });
  // The AsyncLocalStorage context manager and the W3C trace-context + baggage propagator.
  provider.register();
  tracer = provider.getTracer("mailroom");
  storeThresholdMs = settings.storeThresholdMs;
  shutdown = () => provider.shutdown();
  return true;
}

/** Exports what is buffered and stops (onShutdown calls it); a no-op when tracing is off. */
export async function stopTracing(): Promise<void> {
  const stop = shutdown;
  tracer = undefined;
  shutdown = undefined;
  storeThresholdMs = Number.POSITIVE_INFINITY;
  await stop?.().catch(() => undefined);
  // The globals register() set, so a later startTracing (tests) can register again.
  trace.disable();
  context.disable();
  propagation.disable();
}

/** Every span started inside a request's context names that request. */
const requestIdProcessor = {
  onStart(span: Span) {
    const requestId = requestContext()?.requestId;
    if (requestId) span.setAttribute(REQUEST_ID_ATTRIBUTE, requestId);
  },
  onEnd() {},
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  /** The parent (an extracted remote context); default the active one. */
  parent?: Context;
  /** Start a new trace even inside another span (the links say where it came from). */
  root?: boolean;
}

/**
 * Runs `fn` inside a new span that ends when it settles (an error recorded on it). With tracing
 * off it is `fn(undefined)`: callers only touch the span through `span?.`.
 */
export function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!tracer) return fn(undefined);
  const parent = options.parent ?? context.active();
  const span = tracer.startSpan(name, { kind: options.kind, attributes: options.attributes, links: options.links, root: options.root }, parent);
  return context.with(trace.setSpan(parent, span), () =>
    fn(span).then(
      (value) => {
        span.end();
        return value;
      },
      (err: unknown) => {
        failSpan(span, err);
        span.end();
        throw err;
      },
    ),
  );
}

/** Marks a span failed with the error's type and message (messages here carry no addresses). */
export function failSpan(span: Span | undefined, err: unknown, message?: string): void {
  if (!span) return;
  const e = err instanceof Error ? err : undefined;
  span.setStatus({ code: SpanStatusCode.ERROR, message: message ?? e?.name ?? "error" });
  span.setAttribute("error.type", (err as { code?: unknown })?.code !== undefined ? String((err as { code: unknown }).code) : (e?.name ?? "error"));
}

/** Starts a span the caller ends (an HTTP request ended by its response); undefined when off. */
export function startSpan(name: string, options: SpanOptions = {}): { span: Span; context: Context } | undefined {
  if (!tracer) return undefined;
  const parent = options.parent ?? context.active();
  const span = tracer.startSpan(name, { kind: options.kind, attributes: options.attributes, links: options.links, root: options.root }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/** Runs `fn` with `ctx` as the active context (as is, when tracing is off or ctx is undefined). */
export function withContext<T>(ctx: Context | undefined, fn: () => T): T {
  return tracer && ctx ? context.with(ctx, fn) : fn();
}

/**
 * A span for work that already happened, kept only when it took at least `thresholdMs`: a slow
 * store operation is worth seeing in its trace, the thousands of fast ones are not.
 */
export function recordSlowSpan(name: string, startedAt: number, thresholdMs: number, attributes: Attributes, error?: unknown): void {
  if (!tracer) return;
  const endedAt = performance.now();
  if (endedAt - startedAt < thresholdMs) return;
  // performance.now() values: the SDK reads numbers below the time origin as relative to it.
  const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes, startTime: startedAt });
  if (error !== undefined) failSpan(span, error);
  span.end(endedAt);
}

/** Headers of any shape with get/set (fetch Headers, NATS MsgHdrs, a plain record). */
interface HeaderCarrier {
  get(key: string): string | null | undefined;
  set(key: string, value: string): void;
}

const carrierGetter: TextMapGetter<HeaderCarrier> = {
  get: (carrier, key) => carrier.get(key) || undefined,
  keys: () => ["traceparent", "tracestate", "baggage"],
};
const carrierSetter: TextMapSetter<HeaderCarrier> = { set: (carrier, key, value) => carrier.set(key, value) };

/** Writes the active (or given) context's traceparent/tracestate into `headers`; nothing when off. */
export function injectTraceContext(headers: HeaderCarrier, ctx?: Context): void {
  if (!tracer) return;
  propagation.inject(ctx ?? context.active(), headers, carrierSetter);
}

/** The remote context in `headers` (their traceparent), or the root context when there is none. */
export function extractTraceContext(headers: HeaderCarrier | undefined): Context {
  return headers ? propagation.extract(ROOT_CONTEXT, headers, carrierGetter) : ROOT_CONTEXT;
}

/** Same for a plain header record (Node's IncomingHttpHeaders). */
export function extractTraceContextFromRecord(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(ROOT_CONTEXT, headers, {
    get: (carrier, key) => {
      const value = carrier[key];
      return Array.isArray(value) ? value[0] : value;
    },
    keys: (carrier) => Object.keys(carrier),
  });
}

/**
 * The active span as a W3C traceparent, to keep beside work that runs later in another trace
 * (a scheduled email, a broadcast's pages): "" when tracing is off or no span is active.
 */
export function currentTraceparent(): string {
  if (!tracer) return "";
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && trace.isSpanContextValid(sc) ? formatTraceparent(sc) : "";
}

export function formatTraceparent(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-0${(sc.traceFlags & TraceFlags.SAMPLED).toString(16)}`;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A link to the span a stored traceparent names; none for "" or a malformed one. */
export function linksTo(traceparent: string | undefined, attributes?: Attributes): Link[] {
  const m = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!m) return [];
  const spanContext: SpanContext = { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16), isRemote: true };
  return trace.isSpanContextValid(spanContext) ? [{ context: spanContext, attributes }] : [];
}

/** The active span's ids for a log line (pino's OpenTelemetry field names); {} when off. */
export function traceLogFields(): { trace_id?: string; span_id?: string } {
  if (!tracer) return {};
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && trace.isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}
