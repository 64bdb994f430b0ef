// The user sign-up process of the XDB design: email a verification link, remind every
// `reminder` until the user verifies (RPC `verify` or a message on queue `verify`), then
// welcome them. The process's data is the user's row of table `user`.
import {
  Client, Command, CommandRequest, CommandResults, CommunicationSchema, Persistence,
  PersistenceSchema, StateDecision, StateSchema, rpc,
  type AsyncState, type Duration, type Process, type WorkerContext,
} from "@xdb/sdk";

export interface Form { email: string; name?: string }
export type EmailKind = "verification" | "reminder" | "welcome";
/** Sends an email; a repeat with the same idempotency key must send nothing. */
export type SendEmail = (to: string, kind: EmailKind, idempotencyKey: string) => void;

class SubmitState implements AsyncState {
  constructor(private readonly sendEmail: SendEmail) {}
  execute(ctx: WorkerContext, _input: void, _results: CommandResults, persistence: Persistence) {
    const form = persistence.getGlobalAttribute<Form>("form")!; // written by the start
    this.sendEmail(form.email, "verification", ctx.idempotencyKey);
    return StateDecision.singleNextState(VerifyState);
  }
}

class VerifyState implements AsyncState {
  constructor(private readonly sendEmail: SendEmail, private readonly reminder: Duration) {}
  waitUntil() {
    return CommandRequest.anyOf(Command.timer(this.reminder), Command.localQueue("verify"));
  }
  execute(ctx: WorkerContext, _input: void, results: CommandResults, persistence: Persistence) {
    const form = persistence.getGlobalAttribute<Form>("form")!;
    if (!results.receivedFromQueue("verify")) {
      this.sendEmail(form.email, "reminder", ctx.idempotencyKey);
      return StateDecision.singleNextState(VerifyState);
    }
    if (persistence.getGlobalAttribute("status") !== "verified") { // published to the queue directly
      const [message] = results.messagesFromQueue<{ source?: string } | undefined>("verify");
      persistence.setGlobalAttribute("status", "verified");
      persistence.setGlobalAttribute("source", message?.source ?? "local-queue");
    }
    this.sendEmail(form.email, "welcome", ctx.idempotencyKey);
    return StateDecision.gracefulCompleteProcess("done");
  }
}

export class UserSignupProcess implements Process {
  constructor(private readonly sendEmail: SendEmail = console.log, private readonly reminder: Duration = { hours: 24 }) {}
  stateSchema() {
    return StateSchema.withStartingState(new SubmitState(this.sendEmail), new VerifyState(this.sendEmail, this.reminder));
  }
  persistenceSchema() {
    return PersistenceSchema.withTable("user", "user_id").globalAttributes("form", "status", "source");
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("verify");
  }
  readonly rpcs = {
    // Locked, so two concurrent verifications cannot both see "waiting".
    verify: rpc((_ctx, source: string, persistence, communication) => {
      if (persistence.getGlobalAttribute("status") === "verified") return "already verified";
      persistence.setGlobalAttribute("status", "verified");
      persistence.setGlobalAttribute("source", source);
      communication.publishToLocalQueue("verify", { source });
      return "done";
    }, { lockType: "EXCLUSIVE_LOCK" }),
  };
}

export const processId = (userId: string) => `user-signup-${userId}`;

/** Starts `userId`'s sign-up: the start transaction writes the form and status `waiting`. */
export function startUserSignup(client: Client, userId: string, form: Form) {
  return client.startProcess(UserSignupProcess, processId(userId), undefined, {
    globalAttributePkValue: userId,
    initialGlobalAttributes: { form, status: "waiting" },
  });
}

export function verifyByRpc(client: Client, userId: string, source: string) {
  return client.invokeRpc(UserSignupProcess, processId(userId), "verify", source);
}
