// The processes the browser test runs, built with the TypeScript SDK: a sign-up that
// waits on a timer or a message and writes its business row, and a state that fails on
// every attempt with an hour between attempts, so only an operator moves it.
import {
  Command, CommandRequest, CommunicationSchema, PersistenceSchema, StateDecision, StateSchema,
  type AsyncState, type CommandResults, type Persistence, type Process, type WorkerContext,
} from "@xdb/sdk";

class VerifyState implements AsyncState {
  waitUntil() {
    return CommandRequest.anyOf(Command.timer({ hours: 1 }), Command.localQueue("verify"));
  }
  execute(_ctx: WorkerContext, _input: void, results: CommandResults, persistence: Persistence) {
    if (!results.receivedFromQueue("verify")) return StateDecision.singleNextState(VerifyState);
    const [message] = results.messagesFromQueue<{ source?: string } | undefined>("verify");
    persistence.setGlobalAttribute("status", "verified");
    persistence.setGlobalAttribute("source", message?.source ?? "queue");
    return StateDecision.gracefulCompleteProcess("verified");
  }
}

export class SignupProcess implements Process {
  stateSchema() {
    return StateSchema.withStartingState(new VerifyState());
  }
  persistenceSchema() {
    return PersistenceSchema.withTable("user", "user_id").globalAttributes("form", "status", "source").localAttributes("note");
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("verify");
  }
}

class ChargeCardState implements AsyncState {
  readonly options = {
    executeApiRetryPolicy: { initialIntervalSeconds: 3600, maximumIntervalSeconds: 3600, maximumAttempts: 0 },
  };
  execute(ctx: WorkerContext): never {
    throw new Error(`the card provider is down (attempt ${ctx.attempt})`);
  }
}

export class ChargeProcess implements Process {
  stateSchema() {
    return StateSchema.withStartingState(new ChargeCardState());
  }
  persistenceSchema() {
    return PersistenceSchema.withTable("user", "user_id").globalAttributes("form", "status");
  }
}
