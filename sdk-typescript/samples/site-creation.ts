// The site-creation process of the status-driven, task-based workflow design: save the
// site's metadata, then create its file system and its database in parallel, bootstrap
// WordPress into the database, and mark the site `created`. The site's row in table
// `site` is the "site status object": `status` goes `creating` -> `created`, each step
// records itself in its own `*_status` column, and every state reads `status` first, so
// a deletion (RPC `delete`: `deleting`) stops a creation in flight.
//
//   start -> SaveMetadata -+-> CreateFs -- publishes "fs-ready", dead end
//                          +-> CreateDb -> Bootstrap -> MarkCreated (waits for "fs-ready")
//   RPC delete: status = deleting, starts DeleteSite -> (grace timer) clean up, deleted
//
// The branches join on local queue `fs-ready`: a message commits with the transition
// that sends it, so the join sees each branch exactly once. External calls fail at
// random and XDB retries the state forever; calls pass the call's idempotency key, the
// same for every attempt, so a retry never creates a resource twice.
import {
  Client, Command, CommandRequest, CommandResults, Communication, CommunicationSchema, NextState,
  Persistence, PersistenceSchema, StateDecision, StateSchema, durationSeconds, rpc,
  type AsyncState, type Duration, type Process, type RetryPolicy, type StateOptions, type WorkerContext,
} from "@xdb/sdk";

import type { Operation, SiteServices } from "./site-services.js";

export const COLUMNS = ["site_id", "name", "status", "metadata_status", "fs_status", "db_status", "bootstrap_status"];
const STEPS = ["metadata_status", "fs_status", "db_status", "bootstrap_status"];

/** Retry every 0.05 s, doubling up to 0.5 s, forever: "retry until it succeeds". */
export const RETRY_FOREVER: RetryPolicy = { initialIntervalSeconds: 0.05, backoffCoefficient: 2, maximumIntervalSeconds: 0.5 };
const options: StateOptions = { waitUntilApiRetryPolicy: RETRY_FOREVER, executeApiRetryPolicy: RETRY_FOREVER };

/** Base of the creation steps: check the site is still `creating`, do the step, decide. */
abstract class Step implements AsyncState<unknown> {
  readonly options = options;
  constructor(protected readonly services: SiteServices) {}
  protected abstract step(ctx: WorkerContext, siteId: string, p: Persistence, c: Communication, input: unknown): StateDecision;
  execute(ctx: WorkerContext, input: unknown, _r: CommandResults, p: Persistence, c: Communication): StateDecision {
    const siteId = p.getGlobalAttribute<string>("site_id")!;
    const status = p.getGlobalAttribute<string>("status");
    if (status === "deleting") return StateDecision.deadEnd(); // DeleteSite ends the process
    if (status !== "creating") return StateDecision.forceFailProcess(`${this.constructor.name}: site ${siteId} is ${status}`);
    return this.step(ctx, siteId, p, c, input);
  }
  protected call(operation: Operation, siteId: string, ctx: WorkerContext) {
    this.services.call(operation, siteId, ctx.idempotencyKey); // throws: XDB retries
  }
}

export interface SiteMetadata { name: string }

class SaveMetadata extends Step {
  protected step(_ctx: WorkerContext, _siteId: string, p: Persistence, _c: Communication, input: unknown) {
    // `status = creating` was written by the start transaction; writing it here again
    // could undo a deletion that committed after this call loaded the row.
    p.setGlobalAttribute("name", (input as SiteMetadata).name);
    p.setGlobalAttribute("metadata_status", "done");
    return StateDecision.multipleNextStates(NextState.of(CreateFs), NextState.of(CreateDb));
  }
}

class CreateFs extends Step {
  protected step(ctx: WorkerContext, siteId: string, p: Persistence, c: Communication) {
    this.call("CREATE_FILE_SYSTEM", siteId, ctx);
    p.setGlobalAttribute("fs_status", "done");
    c.publishToLocalQueue("fs-ready");
    return StateDecision.deadEnd();
  }
}

class CreateDb extends Step {
  protected step(ctx: WorkerContext, siteId: string, p: Persistence) {
    this.call("CREATE_DATABASE", siteId, ctx);
    p.setGlobalAttribute("db_status", "done");
    return StateDecision.singleNextState(Bootstrap);
  }
}

class Bootstrap extends Step {
  protected step(ctx: WorkerContext, siteId: string, p: Persistence) {
    this.call("BOOTSTRAP", siteId, ctx);
    p.setGlobalAttribute("bootstrap_status", "done");
    return StateDecision.singleNextState(MarkCreated);
  }
}

class MarkCreated extends Step {
  waitUntil() {
    return CommandRequest.allOf(Command.localQueue("fs-ready"));
  }
  protected step(_ctx: WorkerContext, siteId: string, p: Persistence) {
    const missing = STEPS.filter((column) => p.getGlobalAttribute(column) !== "done");
    if (missing.length > 0) return StateDecision.forceFailProcess(`site ${siteId}: ${missing.join(", ")} not done`);
    p.setGlobalAttribute("status", "created");
    return StateDecision.gracefulCompleteProcess("created");
  }
}

/** Started by RPC `delete`: after a grace period for calls in flight, removes what creation made. */
class DeleteSite implements AsyncState {
  readonly options = options;
  constructor(private readonly services: SiteServices, private readonly grace: Duration) {}
  waitUntil() {
    return durationSeconds(this.grace) === 0 ? CommandRequest.empty() : CommandRequest.allOf(Command.timer(this.grace));
  }
  execute(ctx: WorkerContext, _input: void, _r: CommandResults, p: Persistence) {
    const siteId = p.getGlobalAttribute<string>("site_id")!;
    this.services.call("DELETE_FILE_SYSTEM", siteId, ctx.idempotencyKey);
    this.services.call("DROP_DATABASE", siteId, ctx.idempotencyKey);
    p.setGlobalAttribute("status", "deleted");
    return StateDecision.forceCompleteProcess("deleted"); // ends every creation thread
  }
}

export class SiteCreationProcess implements Process {
  constructor(private readonly services: SiteServices, private readonly deletionGrace: Duration = 3) {}
  stateSchema() {
    const s = this.services;
    return StateSchema.withStartingState(new SaveMetadata(s), new CreateFs(s), new CreateDb(s), new Bootstrap(s),
      new MarkCreated(s), new DeleteSite(s, this.deletionGrace));
  }
  persistenceSchema() {
    return PersistenceSchema.withTable("site", "site_id").globalAttributes(...COLUMNS);
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("fs-ready");
  }
  readonly rpcs = {
    // Locked, so two concurrent deletions cannot both start a DeleteSite thread.
    delete: rpc((_ctx, _input: void, p, c) => {
      const status = p.getGlobalAttribute("status");
      if (status === "deleting" || status === "deleted") return "already_deleting";
      p.setGlobalAttribute("status", "deleting");
      c.triggerStateMovement(DeleteSite);
      return "deleting";
    }, { lockType: "EXCLUSIVE_LOCK" }),
  };
}

export const processId = (siteId: string) => `site-creation-${siteId}`;

/** Starts creating `siteId`: the start transaction writes its row with status `creating`. */
export function startSiteCreation(client: Client, process: SiteCreationProcess, siteId: string, name: string) {
  const input: SiteMetadata = { name };
  return client.startProcess(process, processId(siteId), input, {
    globalAttributePkValue: siteId,
    initialGlobalAttributes: { status: "creating" },
  });
}

/** Deletes `siteId` while its creation runs. */
export function deleteSite(client: Client, process: SiteCreationProcess, siteId: string) {
  return client.invokeRpc(process, processId(siteId), "delete");
}
