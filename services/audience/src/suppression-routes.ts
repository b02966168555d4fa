import type { ServiceImpl } from "@connectrpc/connect";
import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { SuppressionEntryOutcome, SuppressionReason as PbSuppressionReason, type SuppressionSchema } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { badRequest } from "@mailroom/kit/errors.js";
import type { Audience } from "./domain/audience.js";
import type { Suppression, SuppressionReason } from "@mailroom/records/model.js";

/** Proto ⇄ domain mapping of the suppression RPCs of ContactService; every rule lives in domain/suppression.ts. */

const ts = (d: Date | undefined) => (d ? timestampFromDate(new Date(d)) : undefined);
const dateOf = (t: Timestamp | undefined) => (t ? timestampDate(t) : undefined);

export const REASON_TO_PB: Record<SuppressionReason, PbSuppressionReason> = {
  unsubscribed: PbSuppressionReason.UNSUBSCRIBED,
  hard_bounce: PbSuppressionReason.HARD_BOUNCE,
  complaint: PbSuppressionReason.COMPLAINT,
  manual: PbSuppressionReason.MANUAL,
  imported: PbSuppressionReason.IMPORTED,
};
const REASON_NAMES: Partial<Record<number, SuppressionReason>> = Object.fromEntries(
  Object.entries(REASON_TO_PB).map(([name, value]) => [value, name as SuppressionReason]),
);

/** A reason given over RPC; unspecified is `fallback` (undefined: no filter). */
function reasonFromPb(value: PbSuppressionReason, fallback?: SuppressionReason): SuppressionReason | undefined {
  if (value === PbSuppressionReason.UNSPECIFIED) return fallback;
  const reason = REASON_NAMES[value];
  if (!reason) throw badRequest("invalid_reason", `unknown suppression reason ${value}`);
  return reason;
}

export function suppressionToPb(s: Suppression): MessageInitShape<typeof SuppressionSchema> {
  return {
    email: s.domain && s.emailLower.startsWith("@") ? "" : s.emailLower,
    domain: s.domain ?? "",
    reason: REASON_TO_PB[s.reason],
    detail: s.detail,
    source: s.source ?? "",
    createdAt: ts(s.createdAt),
  };
}

const OUTCOME_TO_PB = {
  created: SuppressionEntryOutcome.CREATED,
  existing: SuppressionEntryOutcome.EXISTING,
  rejected: SuppressionEntryOutcome.REJECTED,
} as const;

type SuppressionRpcs = "addSuppression" | "removeSuppression" | "checkSuppression" | "listSuppressions" | "addSuppressions" | "exportSuppressions";

export function suppressionHandlers(dir: Audience): Pick<ServiceImpl<typeof ContactService>, SuppressionRpcs> {
  return {
    async addSuppression(req) {
      const reason = reasonFromPb(req.reason, "manual")!;
      const { suppression, created } = await dir.suppressions.suppress(
        req.workspaceId, { email: req.email, domain: req.domain }, reason, { detail: req.detail, source: req.source },
      );
      return { suppression: suppressionToPb(suppression), created };
    },
    async removeSuppression(req) {
      const removed = await dir.suppressions.lift(req.workspaceId, { email: req.email, domain: req.domain }, { force: req.force, requireFound: req.requireFound });
      return { removed: removed ? suppressionToPb(removed) : undefined };
    },
    async checkSuppression(req) {
      return { suppressed: (await dir.suppressions.check(req.workspaceId, req.emails)).map(suppressionToPb) };
    },
    async listSuppressions(req) {
      const page = await dir.suppressions.list(req.workspaceId, {
        limit: req.page?.limit, cursor: req.page?.cursor, reason: reasonFromPb(req.reason), since: dateOf(req.since), search: req.search,
      });
      return { suppressions: page.items.map(suppressionToPb), page: { nextCursor: page.nextCursor, hasMore: page.hasMore } };
    },
    async addSuppressions(req) {
      const results = await dir.suppressions.addMany(req.workspaceId, req.entries.map((e) => ({
        email: e.email || undefined,
        domain: e.domain || undefined,
        reason: reasonFromPbLenient(e.reason),
        source: e.source || undefined,
        createdAt: dateOf(e.createdAt),
      })));
      const count = (outcome: string) => results.filter((r) => r.outcome === outcome).length;
      return {
        results: results.map((r) => ({
          outcome: OUTCOME_TO_PB[r.outcome],
          errorCode: r.outcome === "rejected" ? r.code : "",
          errorMessage: r.outcome === "rejected" ? r.message : "",
        })),
        created: count("created"),
        existing: count("existing"),
        rejected: count("rejected"),
      };
    },
    async *exportSuppressions(req) {
      for await (const batch of dir.suppressions.export(req.workspaceId, { reason: reasonFromPb(req.reason), since: dateOf(req.since), batchSize: req.batchSize })) {
        yield { suppressions: batch.map(suppressionToPb) };
      }
    },
  };
}

/** An entry's reason: unspecified is `imported`; an unknown value is left for the domain to reject on that entry alone. */
function reasonFromPbLenient(value: PbSuppressionReason): SuppressionReason {
  if (value === PbSuppressionReason.UNSPECIFIED) return "imported";
  return REASON_NAMES[value] ?? (`unknown_${value}` as SuppressionReason);
}
