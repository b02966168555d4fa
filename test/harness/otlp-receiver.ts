/**
 * An OTLP/HTTP trace endpoint for tests: what a collector (or Jaeger, Tempo, Honeycomb) would
 * receive. Units export to it with `otlpEnv(receiver)`; it decodes OTLP/JSON export requests into
 * flat spans and keeps the protobuf ones' sizes (the default protocol's bytes, not decoded).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** OpenTelemetry span kinds as OTLP numbers them. */
export const KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  /** The resource's service.name (mailroom-gateway, mailroom-email …). */
  service: string;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string; attributes: Record<string, string | number | boolean> }[];
  statusCode: number;
  startNs: bigint;
  endNs: bigint;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Export requests seen, by content type (protobuf ones are counted, not decoded). */
  requests: { contentType: string; bytes: number; path: string }[];
  /** Resolves with the spans once `done(spans)` holds (re-checked as exports arrive). */
  waitFor(done: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };

const valueOf = (v: AnyValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue ?? ""));
const attributesOf = (list: KeyValue[] | undefined) => Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

/** Environment that makes every unit export its spans here at once (OTLP/JSON, 100 ms batches). */
export function otlpEnv(receiver: OtlpReceiver): Record<string, string> {
  return { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_BSP_SCHEDULE_DELAY: "100" };
}

/** In-process tests: kit's startTracing (the SDK) reads process.env while it starts; set `vars` for that, then put everything back. */
export async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const names = Object.keys(vars).concat(Object.keys(process.env).filter((k) => k.startsWith("OTEL_")));
  const saved = Object.fromEntries(names.map((k) => [k, process.env[k]]));
  for (const k of names) delete process.env[k];
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const k of names) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  }
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver["requests"] = [];
  const waiters = new Set<() => void>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const contentType = req.headers["content-type"] ?? "";
      requests.push({ contentType, bytes: body.length, path: req.url ?? "" });
      if (req.method === "POST" && req.url === "/v1/traces" && contentType.startsWith("application/json")) {
        const doc = JSON.parse(body.toString("utf8")) as {
          resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
        };
        for (const rs of doc.resourceSpans ?? []) {
          const service = String(attributesOf(rs.resource?.attributes)["service.name"] ?? "");
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                traceId: s.traceId as string,
                spanId: s.spanId as string,
                parentSpanId: (s.parentSpanId as string) || undefined,
                name: s.name as string,
                kind: s.kind as number,
                service,
                attributes: attributesOf(s.attributes as KeyValue[]),
                links: ((s.links as { traceId: string; spanId: string; attributes?: KeyValue[] }[]) ?? []).map((l) => ({
                  traceId: l.traceId,
                  spanId: l.spanId,
                  attributes: attributesOf(l.attributes),
                })),
                statusCode: ((s.status as { code?: number }) ?? {}).code ?? 0,
                startNs: BigInt(s.startTimeUnixNano as string),
                endNs: BigInt(s.endTimeUnixNano as string),
              });
            }
          }
        }
        for (const wake of waiters) wake();
      }
      res.writeHead(200, { "content-type": contentType.startsWith("application/json") ? "application/json" : "application/x-protobuf" });
      res.end(contentType.startsWith("application/json") ? "{}" : "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    spans,
    requests,
    waitFor(done, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!done(spans)) return;
          cleanup();
          resolve(spans);
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`spans not received within ${timeoutMs} ms; have:\n${spans.map((s) => `  ${s.service} ${s.name} ${s.traceId}/${s.spanId}<-${s.parentSpanId ?? "root"}`).join("\n")}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
