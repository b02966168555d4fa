import { toBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { CompiledMessageSchema, ContentKind, type RendererService } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import type { JsonObject } from "@bufbuild/protobuf";
import type { CompileInput, PreviewRecipient, RenderedMessage, Renderer } from "../domain/ports.js";
import { asDomainError } from "./errors.js";

/** The renderer over Connect; a compiled message is kept as protobuf bytes. */
export class RendererClient implements Renderer {
  constructor(private readonly client: Client<typeof RendererService>) {}

  async detectVariables(input: { html: string; subject: string; previewText: string; customProperties: string[] }) {
    try {
      const res = await this.client.detectVariables(input, { timeoutMs: 30_000 });
      return { detected: res.detected, unknown: res.unknown };
    } catch (err) {
      throw asDomainError(err);
    }
  }

  async compile(input: CompileInput): Promise<Uint8Array> {
    try {
      const { compiled } = await this.client.compile({ ...input, kind: ContentKind.BROADCAST }, { timeoutMs: 30_000 });
      if (!compiled) throw new Error("renderer returned no compiled message");
      return toBinary(CompiledMessageSchema, compiled);
    } catch (err) {
      throw asDomainError(err);
    }
  }

  async render(input: CompileInput, recipient: PreviewRecipient): Promise<RenderedMessage> {
    try {
      const res = await this.client.render(
        {
          source: { case: "content", value: { ...input, kind: ContentKind.BROADCAST } },
          // Contact properties are JSON values already (they come from the audience unit as such).
          variables: recipient.variables as JsonObject,
          recipientEmail: recipient.email,
          contactId: recipient.contactId,
          messageId: recipient.messageId,
        },
        { timeoutMs: 30_000 },
      );
      return { subject: res.subject, html: res.html, text: res.text, previewText: res.previewText, unsubscribeUrl: res.unsubscribeUrl };
    } catch (err) {
      throw asDomainError(err);
    }
  }
}
