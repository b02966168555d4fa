import { toBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { CompiledMessageSchema, ContentKind, type RendererService } from "../../../../gen/mailroom/renderer/v1/renderer_pb.js";
import type { CompileInput, Renderer } from "../domain/ports.js";
import { asDomainError } from "./errors.js";

/** The renderer over Connect; a compiled message is kept as protobuf bytes. */
export class RpcRenderer implements Renderer {
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
}
