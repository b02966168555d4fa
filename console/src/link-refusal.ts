/**
 * What a person is told when the accounts unit refuses a magic link or an invitation: shared by
 * the sign-in pages (pages/sign-in.ts) and the team's invitation pages.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { refusal } from "@mailroom/http/errors.js";

/** What a person is told about a magic link or invitation the accounts unit refused, by its code. */
export const LINK_MESSAGES: Record<string, string> = {
  magic_link_expired: "This sign-in link has expired. Ask for a new one.",
  magic_link_used: "This sign-in link was already used. Ask for a new one.",
  magic_link_invalid: "This sign-in link is not valid. Ask for a new one.",
  invitation_expired: "This invitation has expired. Ask whoever invited you for a new one.",
  invitation_used: "This invitation was already accepted. Sign in instead.",
  invitation_invalid: "This invitation is not valid. Ask whoever invited you for a new one.",
  member_not_active: "This address is not an active member of the workspace.",
  oidc_subject_mismatch: "This address signed in with another account of the provider before.",
};

/** The refusal page of a link the accounts unit would not take, or the error itself when it is no refusal. */
export function linkRefusal(err: unknown, fallback: string): Error {
  const code = errorInfoOf(err)?.code ?? "";
  if (LINK_MESSAGES[code]) return refusal({ code: "unauthorized", status: 401, message: LINK_MESSAGES[code] });
  if (err instanceof ConnectError && [Code.Unauthenticated, Code.NotFound, Code.InvalidArgument, Code.PermissionDenied].includes(err.code)) {
    return refusal({ code: "unauthorized", status: 401, message: LINK_MESSAGES[fallback] ?? "This link is not valid." });
  }
  return err as Error;
}
