// Security against the real services. Worker-call signatures: XDB signs its calls with
// the shared secret and the SDK worker accepts them (state APIs from the async service,
// RPCs from the API service); a forged call is refused with 401; a worker holding
// another secret refuses XDB, and the refused attempt shows in the history. Bearer
// tokens: the client sends its token; without it the service refuses with UNAUTHORIZED.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import {
  Client, Command, CommandRequest, CommunicationSchema, StateDecision, StateSchema, WORKER_PATHS, WorkerService, rpc,
  isApiError, sign, type AsyncState, type Process,
} from "@xdb/sdk";

import { DIALECTS, TestEnv, eventually, type TestWorker } from "./harness.js";

const SECRET = "0123456789abcdef-signing-secret";
const TOKEN = "api-token-0123456789abcdef";

class WaitState implements AsyncState {
  waitUntil() {
    return CommandRequest.allOf(Command.localQueue("go"));
  }
  execute() {
    return StateDecision.gracefulCompleteProcess("signed");
  }
}

class SignedProcess implements Process {
  stateSchema() {
    return StateSchema.withStartingState(new WaitState());
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("go");
  }
  readonly rpcs = { ping: rpc(() => "pong") };
}

for (const dialect of DIALECTS) {
  describe(`security on ${dialect}`, () => {
    let env: TestEnv;
    let signed: TestWorker;
    let client: Client;
    const process = new SignedProcess();

    before(async () => {
      env = await TestEnv.start(dialect, "signature", { signingSecret: SECRET, apiTokens: [TOKEN] });
      const service = new WorkerService({ onError: () => undefined }).register(process).withSigningSecret(SECRET);
      signed = await env.worker(service.nodeHandler());
      client = new Client({ serviceUrl: env.server.url, workerUrl: signed.url, bearerToken: TOKEN });
    });
    after(async () => {
      await env?.stop();
    });

    it("refuses a client without the bearer token", async () => {
      for (const bearerToken of [undefined, "wrong-token-0123456789abcdef"]) {
        const stranger = new Client({ serviceUrl: env.server.url, workerUrl: signed.url, ...(bearerToken ? { bearerToken } : {}) });
        await assert.rejects(stranger.startProcess(process, "stranger"), (error: unknown) => {
          assert.ok(isApiError(error, "UNAUTHORIZED"), String(error));
          assert.equal(error.status, 401);
          return true;
        });
      }
      await assert.rejects(client.describe("stranger"), (error: unknown) => isApiError(error, "PROCESS_NOT_FOUND"));
    });

    it("accepts XDB's signed calls: waitUntil, RPC and execute", async () => {
      await client.startProcess(process, "signed");
      assert.equal(await client.invokeRpc(process, "signed", "ping"), "pong");
      await client.publishToLocalQueue("signed", "go");
      const done = await client.waitForCompletion("signed", { timeoutMs: 20_000 });
      assert.equal(done.status, "COMPLETED");
      assert.equal(done.output, "signed");
    });

    it("refuses calls without a valid signature with 401", async () => {
      const body = JSON.stringify({});
      const now = Math.floor(Date.now() / 1000);
      for (const signature of [undefined, sign("another-secret-0123456789", now, body), sign(SECRET, now - 301, body)]) {
        const response = await fetch(`${signed.url}${WORKER_PATHS.waitUntil}`, {
          method: "POST",
          headers: { "content-type": "application/json", ...(signature ? { "X-XDB-Signature": signature } : {}) },
          body,
        });
        assert.equal(response.status, 401);
        assert.equal(((await response.json()) as { errorType: string }).errorType, "UNAUTHORIZED");
      }
    });

    it("a worker holding another secret refuses XDB, visibly", async () => {
      const other = await env.worker(
        new WorkerService({ onError: () => undefined }).register(process).withSigningSecret("another-secret-0123456789").nodeHandler(),
      );
      const exec = await client.startProcess(process, "mismatch", undefined, { workerUrl: other.url });
      await eventually("the refused attempt in the history", 20_000, async () =>
        (await client.history("mismatch", exec)).events.some(
          (e) => e.eventType === "STATE_API_FAILED" && JSON.stringify(e.details).includes("signature does not match"),
        ),
      );
      assert.equal((await client.describe("mismatch")).status, "RUNNING", "nothing moved on without the worker");
      await client.stop("mismatch");
    });
  });
}
