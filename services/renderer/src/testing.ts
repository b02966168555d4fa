import { ContentKind, type CompiledMessage } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { compileMessage, type CompileInput } from "@mailroom/content/compile/compile.js";
import { mergeMessage, type MergeRecipient } from "@mailroom/content/merge.js";

/** Shared fixtures for the renderer's unit tests. */
export const SECRET = "test-secret-0123456789abcdef";
export const PUBLIC_URL = "https://mail.example.test";
export const CTX = { secret: SECRET, publicUrl: PUBLIC_URL };

export function compile(overrides: Partial<CompileInput> & { html: string }): CompiledMessage {
  return compileMessage(
    {
      subject: "Subject",
      previewText: "",
      text: "",
      trackClicks: true,
      trackOpens: false,
      kind: ContentKind.TRANSACTIONAL,
      contentId: "cmp_test",
      workspaceId: "ws_test",
      ...overrides,
    },
    CTX,
  );
}

export const RECIPIENT: MergeRecipient = {
  email: "ann@example.test",
  contactId: "ct_ann",
  messageId: "msg-1@mail.example.test",
  variables: { firstName: "Ann", lastName: "Lee" },
};

export function render(overrides: Partial<CompileInput> & { html: string }, recipient: Partial<MergeRecipient> = {}) {
  const compiled = compile(overrides);
  return { compiled, merged: mergeMessage(compiled, { ...RECIPIENT, ...recipient }, CTX) };
}

/** Every click URL in a merged body, in order. */
export function clickUrls(body: string): string[] {
  return [...body.matchAll(/https:\/\/mail\.example\.test\/t\/c\/[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+/g)].map((m) => m[0]);
}
