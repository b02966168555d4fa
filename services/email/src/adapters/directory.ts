import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { JsonObject } from "@bufbuild/protobuf";
import { LRUCache } from "lru-cache";
import { ContactSource, type ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import type { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import type { Directory, SendableReservation, SenderCheck, TemplateContent } from "../domain/ports.js";
import { Coalescer } from "@mailroom/kit/coalesce.js";
import { fromRpcError, rpc } from "./rpc-errors.js";

const RPC = { timeoutMs: 15_000 };

/** Most (workspace, sender) checks remembered at once; least recently used go first. */
const SENDER_CACHE_MAX = 10_000;

type SenderKey = { workspaceId: string; from: string };

/** Hands a refusal to every caller waiting on one lookup without the cache keeping it. */
class SenderRefused extends Error {
  constructor(readonly check: SenderCheck) {
    super("sender refused");
  }
}

/** The neighbours the email service's `Directory` port is made of. */
export interface DirectoryClients {
  /** The accounts unit's AccountsService: sender checks, verified senders, usage released. */
  accounts: Client<typeof AccountsService>;
  /** The accounts unit's TemplateService: templates with their layout and snippets. */
  templates: Client<typeof TemplateService>;
  /** The audience unit's ContactService: suppressions checked with usage reserved (ReserveSendable), contacts upserted. */
  contacts: Client<typeof ContactService>;
}

/**
 * The `Directory` port over Connect: the accounts unit (senders, templates, usage) and the
 * audience unit (suppressions, contacts). Allowed sender checks are remembered briefly
 * (`senderCacheMs`, like the gateway's key cache) so a burst of sends from one address
 * costs one lookup, and concurrent first sends share that lookup; refusals are never
 * cached, so a newly verified sender works at once.
 */
export class DirectoryClient implements Directory {
  private readonly allowedSenders: LRUCache<string, SenderCheck, SenderKey> | undefined;
  /** Concurrent send requests of one workspace share one reservation call (see reserveSendable). */
  private readonly reservations = new Coalescer<string[], SendableReservation>((workspaceId, requests) =>
    this.reserveTogether(workspaceId, requests),
  );

  constructor(
    private readonly clients: DirectoryClients,
    senderCacheMs = 5_000,
  ) {
    if (senderCacheMs > 0) {
      this.allowedSenders = new LRUCache<string, SenderCheck, SenderKey>({
        max: SENDER_CACHE_MAX,
        ttl: senderCacheMs,
        fetchMethod: async (_key, _stale, { context }) => {
          const check = await this.lookUpSender(context.workspaceId, context.from);
          if (!check.allowed) throw new SenderRefused(check);
          return check;
        },
      });
    }
  }

  async checkSender(workspaceId: string, from: string): Promise<SenderCheck> {
    if (!this.allowedSenders) return this.lookUpSender(workspaceId, from);
    try {
      const check = await this.allowedSenders.fetch(JSON.stringify([workspaceId, from]), { context: { workspaceId, from } });
      return check!; // fetchMethod either returns a check or throws
    } catch (err) {
      if (err instanceof SenderRefused) return err.check;
      throw err;
    }
  }

  private async lookUpSender(workspaceId: string, from: string): Promise<SenderCheck> {
    const res = await rpc(() => this.clients.accounts.checkSender({ workspaceId, from }, RPC));
    return {
      allowed: res.allowed,
      address: res.address,
      name: res.name,
      allowedEmails: res.allowedEmails,
      allowedDomains: res.allowedDomains,
    };
  }

  async verifiedSenders(workspaceId: string): Promise<{ emails: string[]; domains: string[] }> {
    const res = await rpc(() => this.clients.accounts.listSenders({ workspaceId }, RPC));
    return {
      emails: res.emails.filter((e) => e.verified).map((e) => e.email),
      domains: res.domains.filter((d) => d.verified).map((d) => d.domain),
    };
  }

  async getTemplate(workspaceId: string, name: string): Promise<TemplateContent | null> {
    try {
      const { template, includes, timeZone } = await this.clients.templates.getTemplate({ workspaceId, name, withIncludes: true }, RPC);
      if (!template) return null;
      const content: TemplateContent = {
        name: template.name,
        kind: template.kind === "layout" || template.kind === "snippet" ? template.kind : "template",
        subject: template.subject,
        html: template.html,
        text: template.text,
        previewText: template.previewText,
        fromEmail: template.fromEmail,
        fromName: template.fromName,
        replyTo: template.replyTo.map((r) => r.email),
      };
      if (!template.liquid) return content;
      // Liquid (DESIGN §10.2): parsed once per version of the template, its layout and its snippets.
      const layout = includes.find((t) => t.kind === "layout" && t.name === template.layout);
      const snippets = includes.filter((t) => t.kind === "snippet");
      const key = [template, ...includes].map((t) => `${t.id}@${t.version}`).join("|");
      return {
        ...content,
        liquidKey: `${workspaceId}|${key}`,
        ...(layout ? { layout: { html: layout.html, text: layout.text } } : {}),
        snippets: snippets.map((t) => ({ name: t.name, html: t.html })),
        timeZone,
      };
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.NotFound) return null;
      throw fromRpcError(err);
    }
  }

  /**
   * Requests of one workspace that arrive while its last reservation is in flight are
   * reserved together in the next call: one round trip for all of them. The sum is all or
   * nothing, so when it is refused (the monthly limit is near) each request asks again on
   * its own and gets the answer it would have had alone.
   */
  reserveSendable(workspaceId: string, recipients: string[]): Promise<SendableReservation> {
    return this.reservations.run(workspaceId, recipients);
  }

  private async reserveTogether(workspaceId: string, requests: string[][]): Promise<SendableReservation[]> {
    const together = await this.reserveOnce(workspaceId, requests.flat());
    if (requests.length === 1) return [together];
    if (!together.granted) return Promise.all(requests.map((recipients) => this.reserveOnce(workspaceId, recipients)));
    return requests.map((recipients) => {
      const reserved = recipients.filter((r) => !together.suppressed.has(r.trim().toLowerCase())).length;
      return { ...together, reserved, period: reserved ? together.period : "" };
    });
  }

  private async reserveOnce(workspaceId: string, recipients: string[]): Promise<SendableReservation> {
    const res = await rpc(() => this.clients.contacts.reserveSendable({ workspaceId, recipients }, RPC));
    const suppressed = new Map<string, string>();
    // A whole domain's suppression names the domain: the record shows why an address never seen was left out.
    for (const s of res.suppressed) suppressed.set(s.email.toLowerCase(), reasonText(s.reason) + (s.domain ? ` (domain ${s.domain})` : "") + (s.detail ? `: ${s.detail}` : ""));
    return {
      suppressed,
      granted: res.granted,
      reserved: Number(res.reserved),
      period: res.period,
      used: Number(res.used),
      limit: Number(res.limit),
    };
  }

  async releaseUsage(workspaceId: string, count: number, period: string): Promise<void> {
    await rpc(() => this.clients.accounts.releaseUsage({ workspaceId, count: BigInt(count), period }, RPC));
  }

  /** firstName/lastName are built-in fields; everything else is a custom property. */
  async upsertContact(workspaceId: string, email: string, properties: Record<string, unknown>): Promise<void> {
    const { firstName, lastName, email: _ignored, ...custom } = properties;
    await rpc(() =>
      this.clients.contacts.upsertContact(
        {
          workspaceId,
          createMissingProperties: true,
          contact: {
            email,
            // Kept out of broadcast audiences (OPT_IN_PENDING) until subscribed: DESIGN §6.
            source: ContactSource.TRANSACTIONAL_EMAIL,
            firstName: typeof firstName === "string" ? firstName : undefined,
            lastName: typeof lastName === "string" ? lastName : undefined,
            properties: custom as JsonObject,
          },
        },
        RPC,
      ),
    );
  }
}

function reasonText(reason: number): string {
  // SuppressionReason: 1 unsubscribed, 2 hard bounce, 3 complaint, 4 manual, 5 imported.
  return ["suppressed", "unsubscribed", "hard bounce", "complaint", "manually suppressed", "imported suppression"][reason] ?? "suppressed";
}
