/**
 * A gate in front of a worker: it holds the worker calls a test picks until the test
 * releases them, so the test orders a call after other events instead of racing them.
 * It only delays calls; the worker answers every call as it would without it.
 */
import type { IncomingMessage } from "node:http";

import type { NodeHandler } from "@xdb/sdk";

/** The paths of the worker API (docs/worker-protocol.md). */
export const WORKER_API = {
  waitUntil: "/api/v1/xdb/worker/async-state/wait-until",
  execute: "/api/v1/xdb/worker/async-state/execute",
  rpc: "/api/v1/xdb/worker/process/rpc",
} as const;

/** Picks the calls to hold, from the request path and its JSON body. */
export type CallMatcher = (path: string, body: unknown) => boolean;

/** The waitUntil call of state execution `stateExecutionId` (`VerifyState-2`) of process `processId`. */
export function waitUntilOf(processId: string, stateExecutionId: string): CallMatcher {
  return (path, body) => {
    if (path !== WORKER_API.waitUntil) return false;
    const context = (body as { context?: { processId?: unknown; stateExecutionId?: unknown } } | null)?.context;
    return context?.processId === processId && context.stateExecutionId === stateExecutionId;
  };
}

export class CallGate {
  private matcher: CallMatcher | undefined;
  private releaseHeld: () => void = () => undefined;
  private released: Promise<void> = Promise.resolve();
  private holding = 0;

  /** Holds every call `matcher` picks from now until `release()`. */
  hold(matcher: CallMatcher): void {
    this.matcher = matcher;
    this.released = new Promise((resolve) => {
      this.releaseHeld = resolve;
    });
  }

  /** Lets the held calls through, and holds no more. */
  release(): void {
    this.matcher = undefined;
    this.releaseHeld();
  }

  /** How many calls are held now. */
  get held(): number {
    return this.holding;
  }

  /** `handler` behind the gate. */
  wrap(handler: NodeHandler): NodeHandler {
    return (req, res, next) => {
      void readBody(req).then(
        async (body) => {
          // The SDK reads a body a framework already read from `rawBody`, as it is.
          Object.assign(req, { rawBody: body });
          const matcher = this.matcher;
          if (matcher && matcher(req.url ?? "/", parseJson(body))) {
            this.holding += 1;
            try {
              await this.released;
            } finally {
              this.holding -= 1;
            }
          }
          handler(req, res, next);
        },
        (error: unknown) => {
          res.writeHead(400, { "content-type": "text/plain" });
          res.end(`the gate could not read the request: ${String(error)}`);
        },
      );
    };
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks);
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}
