// A real HTTP server (node:http) on 127.0.0.1 that answers each request with the next step
// of a script, for the client's retries: a step drops the connection without an answer,
// hangs, or answers a status with a JSON body and headers. Every request is recorded (path
// and the exact body text), answered or not.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type Step =
  | { readonly drop: true }
  | { readonly hangMs: number }
  | { readonly status: number; readonly body?: unknown; readonly headers?: Record<string, string> };

/** Read the request, then close the connection without answering. */
export const drop: Step = { drop: true };

/** Read the request and answer nothing for `ms`, then close the connection. */
export const hang = (ms: number): Step => ({ hangMs: ms });

export const answer = (status: number, body: unknown = {}, headers: Record<string, string> = {}): Step => ({
  status,
  body,
  headers,
});

/** The service's error answer of `subType`. */
export const refusal = (status: number, subType: string, retryAfter?: string): Step =>
  answer(status, { subType, message: `scripted ${subType}` }, retryAfter === undefined ? {} : { "retry-after": retryAfter });

export interface Seen {
  readonly path: string;
  readonly body: string;
}

export interface ScriptedService {
  readonly url: string;
  readonly seen: Seen[];
  /** The bodies as JSON. */
  json(): Record<string, unknown>[];
  close(): Promise<void>;
}

/** Serves `steps` in order on a free port of 127.0.0.1; once they are spent, the last again. */
export async function scriptedService(...steps: Step[]): Promise<ScriptedService> {
  if (steps.length === 0) throw new Error("a script needs at least one step");
  const script = [...steps];
  const seen: Seen[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      seen.push({ path: req.url ?? "/", body: Buffer.concat(chunks).toString() });
      const step = (script.length > 1 ? script.shift() : script[0]) as Step;
      if ("drop" in step) {
        req.socket.destroy();
      } else if ("hangMs" in step) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          req.socket.destroy();
        }, step.hangMs);
        timers.add(timer);
      } else {
        res.writeHead(step.status, { ...step.headers, "content-type": "application/json" });
        res.end(JSON.stringify(step.body));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    seen,
    json: () => seen.map((s) => JSON.parse(s.body) as Record<string, unknown>),
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
