/**
 * Store metrics and readiness, whatever engine is underneath: `instrumentStore` wraps a Store so
 * every collection operation is timed by collection and operation, and registers the store with
 * the process's /readyz. It wraps any method a collection has (a Proxy), so engines adding
 * methods are measured too.
 *
 * With tracing on (DESIGN §9.10) an operation at least MAILROOM_TRACE_STORE_THRESHOLD_MS slow
 * (default 10 ms) also becomes a span in the trace it ran in: the slow ones explain a slow
 * request, the thousands of fast ones would only bury it. Off, the threshold is infinite and the
 * one comparison is all it costs.
 */
import { registerReadyCheck } from "@mailroom/kit/health.js";
import { counter, histogram } from "@mailroom/kit/metrics.js";
import { recordSlowSpan, slowStoreOperationMs } from "@mailroom/kit/tracing.js";
import type { Collection, Doc, Store } from "./port.js";

const operationSeconds = histogram(
  "mailroom_store_operation_duration_seconds",
  "Store operations by collection and operation.",
  ["collection", "op"],
  [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
);
const operationErrors = counter("mailroom_store_operation_errors_total", "Store operations that threw (duplicate keys included).", ["collection", "op"]);

/** An _id no document has: a cheap indexed lookup that proves the store answers. */
const READY_PROBE = { _id: "__mailroom_readyz__" };

/** The engines a span can name (OpenTelemetry's db.system.name). */
export type StoreEngine = "mongodb" | "postgresql" | "lmdb" | "nedb";

/**
 * `engine` names the database in slow operations' spans; unset, MongoDB is known by the
 * store's kind and an embedded store is left unnamed.
 */
export function instrumentStore(store: Store, service = "store", engine: StoreEngine | undefined = store.kind === "mongodb" ? "mongodb" : undefined): Store {
  const collections = new Map<string, Collection<Doc>>();
  let closed = false;
  // A collection the service itself opened: probing it creates nothing new in any engine.
  let probe: Collection<Doc> | undefined;

  const unregister = registerReadyCheck({
    name: `store:${service}`,
    check: async () => {
      if (closed) throw new Error("store closed");
      await probe?.findOne(READY_PROBE);
    },
  });

  const wrapCollection = (name: string, inner: Collection<Doc>): Collection<Doc> => {
    // One timed wrapper per method, made on first use: a store call is on every send's path.
    const wrappers = new Map<string, { method: unknown; wrapper: (...args: unknown[]) => unknown }>();
    const timed = (op: string, method: (...args: unknown[]) => unknown) => {
      const labels = { collection: name, op };
      const slow = (started: number, elapsedMs: number, err?: unknown) => {
        // Checked here, not in recordSlowSpan: a fast operation builds no attributes at all.
        if (elapsedMs < slowStoreOperationMs()) return;
        recordSlowSpan(`store ${op} ${name}`, started, 0, {
          ...(engine ? { "db.system.name": engine } : {}),
          "db.collection.name": name,
          "db.operation.name": op,
        }, err);
      };
      return (...args: unknown[]) => {
        const started = performance.now();
        let result: unknown;
        try {
          result = method.apply(inner, args);
        } catch (err) {
          operationErrors.inc(labels);
          slow(started, performance.now() - started, err);
          throw err;
        }
        if (!(result instanceof Promise)) return result;
        return result.then(
          (v) => {
            const ms = performance.now() - started;
            operationSeconds.observe(labels, ms / 1000);
            slow(started, ms);
            return v;
          },
          (err) => {
            const ms = performance.now() - started;
            operationSeconds.observe(labels, ms / 1000);
            operationErrors.inc(labels);
            slow(started, ms, err);
            throw err;
          },
        );
      };
    };
    return new Proxy(inner, {
      get(target, prop) {
        const value = Reflect.get(target, prop);
        if (typeof value !== "function" || typeof prop !== "string") return value;
        const cached = wrappers.get(prop);
        if (cached && cached.method === value) return cached.wrapper;
        const wrapper = timed(prop, value as (...args: unknown[]) => unknown);
        wrappers.set(prop, { method: value, wrapper });
        return wrapper;
      },
    });
  };

  return new Proxy(store, {
    get(target, prop) {
      if (prop === "collection") {
        return <T extends Doc>(name: string): Collection<T> => {
          let wrapped = collections.get(name);
          if (!wrapped) {
            const inner = target.collection<Doc>(name);
            wrapped = wrapCollection(name, inner);
            collections.set(name, wrapped);
            probe ??= inner;
          }
          return wrapped as unknown as Collection<T>;
        };
      }
      if (prop === "close") {
        return async () => {
          closed = true;
          unregister();
          await target.close();
        };
      }
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
