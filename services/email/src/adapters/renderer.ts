import { toBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { CompiledMessageSchema, ContentKind, type RendererService } from "../../../../gen/mailroom/renderer/v1/renderer_pb.js";
import type { CompiledContent } from "../domain/model.js";
import type { CompileInput, Renderer } from "../domain/ports.js";
import { rpc } from "./rpc-errors.js";

/** The renderer over Connect; the compiled message is kept as protobuf bytes. */
export class ConnectRenderer implements Renderer {
  constructor(private readonly client: Client<typeof RendererService>) {}

  async compile(input: CompileInput): Promise<CompiledContent> {
    const { compiled } = await rpc(() =>
      this.client.compile(
        {
          html: input.html,
          subject: input.subject,
          previewText: input.previewText,
          text: input.text,
          trackClicks: input.trackClicks,
          trackOpens: input.trackOpens,
          kind: ContentKind.TRANSACTIONAL,
          literal: input.literal,
          contentId: input.contentId,
          workspaceId: input.workspaceId,
        },
        { timeoutMs: 30_000 },
      ),
    );
    if (!compiled) throw new Error("renderer returned no compiled message");
    return toBinary(CompiledMessageSchema, compiled);
  }
}
