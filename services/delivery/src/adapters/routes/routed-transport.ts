/**
 * Delivery routes (DESIGN §9.7): one MailTransport over several named ones (relays, direct
 * to MX, capture). Each mail goes to a route chosen among those serving its lane and
 * workspace, weighted at random among the routes that are up; a route that refuses us before
 * the message went out is marked down for a while and the same mail tries the next one at
 * once. Only failures before DATA's body move a mail: after it, the message may have been
 * delivered, so it is deferred as with one relay (the back-off retries it, on a route that
 * is up then). A direct route's failures are its destinations', not its own: it is never marked
 * down, and its mail never moved.
 */
import { correlationHeaders } from "@mailroom/pipeline/relay-providers.js";
import type { Logger } from "@mailroom/kit/logger.js";
import { clip } from "../../domain/outcome.js";
import { sendOnRoute } from "../smtp-span.js";
import { SmtpFailure, type Lane, type MailTransport, type OutgoingMail, type SendResult } from "../../domain/ports.js";

export type RouteKind = "relay" | "direct" | "capture";

export interface Route {
  readonly name: string;
  readonly kind: RouteKind;
  /** Where it sends, without credentials (a redacted URL, "MX", "capture"). */
  readonly target: string;
  /** 0: failover only, used when every weighted candidate is down. */
  readonly weight: number;
  /** Empty: both lanes. */
  readonly lanes: readonly Lane[];
  /** Empty: every workspace that no route names. */
  readonly workspaces: readonly string[];
  /** The relay provider whose correlation headers mail on this route carries. */
  readonly provider?: string;
  readonly transport: MailTransport;
  /** Resolves when the route's shared rate lets one more message go; absent: unlimited. */
  readonly gate?: () => Promise<void>;
}

export interface RoutingOptions {
  /** First time a failing route is left out; doubles while it stays bad, up to downMaxMs. */
  downMs: number;
  downMaxMs: number;
  /** Consecutive deferrals (no success between) that mark a route down. */
  downAfter: number;
  logger?: Logger;
  /** Told when a route goes down or comes back (the health gauge). */
  onHealth?: (route: string, up: boolean) => void;
  now?: () => number;
  /** [0, 1) (tests fix it). */
  random?: () => number;
}

/** A route's health as this process sees it. */
export interface RouteHealth {
  name: string;
  kind: RouteKind;
  target: string;
  weight: number;
  lanes: Lane[];
  workspaces: string[];
  provider: string;
  down: boolean;
  /** When it gets traffic again (set while down). */
  downUntil?: Date;
  lastError: string;
}

interface Entry {
  route: Route;
  /** Left out until then (epoch ms). */
  downUntil: number;
  /** The current down period; 0 while the route is good. */
  downMs: number;
  /** One mail is trying a route that came back; the others wait for its answer. */
  probing: boolean;
  deferrals: number;
  lastError: string;
}

const LANES: readonly Lane[] = ["transactional", "broadcast"];

/**
 * The relay refused us, not the message: no connection, no reply, a 421 greeting, a 4xx or
 * 5xx to AUTH or MAIL FROM — all before any of the message went out, so another route may
 * take it without a duplicate.
 */
export function isRouteFault(err: unknown): err is SmtpFailure {
  return err instanceof SmtpFailure && err.beforeData && (err.code === 0 || !err.aboutRecipient);
}

export class RoutedTransport implements MailTransport {
  readonly description: string;
  readonly capturing: boolean;
  private readonly entries: Entry[];
  /** Candidates by `<workspace or "">\0<lane>`, in the order the routes were listed. */
  private readonly candidates = new Map<string, Entry[]>();
  private readonly reserved: Set<string>;
  private readonly now: () => number;
  private readonly random: () => number;
  private closing = false;

  constructor(routes: readonly Route[], private readonly opts: RoutingOptions) {
    if (routes.length === 0) throw new Error("RoutedTransport needs at least one route");
    this.entries = routes.map((route) => ({ route, downUntil: 0, downMs: 0, probing: false, deferrals: 0, lastError: "" }));
    this.now = opts.now ?? Date.now;
    this.random = opts.random ?? Math.random;
    this.capturing = routes.every((r) => r.transport.capturing);
    // One route: described as before routes existed (its relay URL, or "capture").
    this.description = routes.length === 1 ? routes[0].transport.description : `routes: ${routes.map((r) => `${r.name} (${r.target})`).join(", ")}`;
    this.reserved = new Set(routes.flatMap((r) => r.workspaces));
    for (const ws of ["", ...this.reserved]) {
      for (const lane of LANES) {
        const list = this.entries.filter(
          (e) => (ws ? e.route.workspaces.includes(ws) : e.route.workspaces.length === 0) && (e.route.lanes.length === 0 || e.route.lanes.includes(lane)),
        );
        if (list.length === 0) throw new Error(`no route carries ${lane} mail${ws ? ` of workspace ${ws}` : ""}`);
        this.candidates.set(`${ws}\u0000${lane}`, list);
      }
    }
  }

  async send(mail: OutgoingMail): Promise<SendResult> {
    const ws = this.reserved.has(mail.meta.workspaceId) ? mail.meta.workspaceId : "";
    const candidates = this.candidates.get(`${ws}\u0000${mail.lane}`) ?? this.candidates.get(`${ws}\u0000transactional`)!;
    const tried = new Set<Entry>();
    let last: unknown;
    for (let entry = this.pick(candidates, tried); entry; entry = this.pick(candidates, tried)) {
      tried.add(entry);
      const { route } = entry;
      try {
        await route.gate?.();
        // The SMTP attempt's span (smtp-span.ts) names the route it went on.
        const result = await sendOnRoute(route.name, route.transport, this.mailFor(route, mail));
        this.answered(entry);
        return { ...result, route: route.name };
      } catch (caught) {
        // Anything else (building the message, a capture write) becomes a deferral named after the route.
        const err = caught instanceof SmtpFailure ? caught : new SmtpFailure(caught instanceof Error ? caught.message : String(caught), 0, false, false);
        err.route = route.name;
        // Direct delivery's failures are about the destination's MX hosts, not the route: never
        // marked down nor moved (the back-off retries them).
        // Shutting down, every route refuses: nothing to learn about any of them.
        if (route.kind === "direct" || this.closing) throw err;
        if (!isRouteFault(err)) {
          this.refusedMail(entry, err);
          throw err;
        }
        this.markDown(entry, err);
        last = err;
      }
    }
    throw last;
  }

  /**
   * The next route for a mail: weighted at random among the untried ones that are up;
   * failover-only (weight 0) ones, in the order listed, when no weighted one is; when every
   * one is down, the one back soonest (mail is never dropped for want of a route).
   */
  private pick(candidates: readonly Entry[], tried: ReadonlySet<Entry>): Entry | undefined {
    const now = this.now();
    const left = candidates.filter((e) => !tried.has(e));
    if (left.length === 0) return undefined;
    const up = left.filter((e) => e.downUntil <= now && !e.probing);
    const weighted = up.filter((e) => e.route.weight > 0);
    let chosen: Entry;
    if (weighted.length > 0) {
      let ticket = this.random() * weighted.reduce((sum, e) => sum + e.route.weight, 0);
      chosen = weighted.find((e) => (ticket -= e.route.weight) < 0) ?? weighted[weighted.length - 1];
    } else if (up.length > 0) {
      chosen = up[0];
    } else {
      chosen = left.reduce((a, b) => (b.downUntil < a.downUntil ? b : a));
    }
    // Back from a down period: this mail is its probe; the others stay away until it answers.
    if (chosen.downMs > 0 && chosen.downUntil <= now) chosen.probing = true;
    return chosen;
  }

  /** The provider's correlation headers go on that route's copy only; the caller's mail stays as it was. */
  private mailFor(route: Route, mail: OutgoingMail): OutgoingMail {
    const extra = route.provider ? correlationHeaders(route.provider, mail.meta.deliveryId) : [];
    return extra.length ? { ...mail, headers: [...mail.headers, ...extra] } : mail;
  }

  /** The route took the message: it is up, whatever it was. */
  private answered(e: Entry): void {
    e.deferrals = 0;
    this.up(e);
  }

  /** The route answered about the message (a bounce, a deferral, a cut after DATA). */
  private refusedMail(e: Entry, err: unknown): void {
    e.lastError = clip(err instanceof Error ? err.message : String(err));
    const bounce = err instanceof SmtpFailure && err.aboutRecipient && err.code >= 500 && err.code < 600;
    if (bounce) {
      this.up(e); // a relay that judges recipients is working
      return;
    }
    e.deferrals += 1;
    if (e.deferrals >= this.opts.downAfter) {
      this.markDown(e, err, `deferred ${e.deferrals} messages in a row`);
    } else if (e.probing) {
      e.probing = false; // answered: the others may come
    }
  }

  private up(e: Entry): void {
    e.probing = false;
    if (e.downMs === 0) return;
    e.downMs = 0;
    e.downUntil = 0;
    this.opts.onHealth?.(e.route.name, true);
    this.opts.logger?.info({ route: e.route.name }, "delivery route is up again");
  }

  /** Left out for the current period; doubled when it failed again after coming back. */
  private markDown(e: Entry, err: unknown, why?: string): void {
    const now = this.now();
    e.lastError = clip(`${why ? `${why}; last: ` : ""}${err instanceof Error ? err.message : String(err)}`);
    e.probing = false;
    e.deferrals = 0;
    // Several mails in flight fail with one outage: the first one starts the period.
    if (e.downUntil > now) return;
    e.downMs = e.downMs > 0 ? Math.min(e.downMs * 2, this.opts.downMaxMs) : this.opts.downMs;
    e.downUntil = now + e.downMs;
    this.opts.onHealth?.(e.route.name, false);
    this.opts.logger?.warn({ route: e.route.name, downMs: e.downMs, err: e.lastError }, "delivery route marked down; its traffic moves to the other routes");
  }

  /** Each route and its health, in the order configured. */
  health(): RouteHealth[] {
    const now = this.now();
    return this.entries.map((e) => {
      const down = e.downUntil > now || e.probing;
      return {
        name: e.route.name,
        kind: e.route.kind,
        target: e.route.target,
        weight: e.route.weight,
        lanes: [...e.route.lanes],
        workspaces: [...e.route.workspaces],
        provider: e.route.provider ?? "",
        down,
        ...(down ? { downUntil: new Date(Math.max(e.downUntil, now)) } : {}),
        lastError: e.lastError,
      };
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.entries.map((e) => e.route.transport.close()));
  }
}
