/**
 * What `execute` returns: the next states (several run as parallel threads), or how the
 * thread closes. Values are encoded when the decision is made, so an encoding failure
 * surfaces in user code, not later.
 */
import { encodeOptional } from "./encoding.js";
import type { EncodedObject, ThreadCloseType } from "./protocol.js";
import { stateIdOf, type InputArgs, type StateRef } from "./state.js";

/** A state to move to, with its input; its config comes from the state's registration. */
export class NextState {
  private constructor(
    readonly stateId: string,
    readonly input: EncodedObject | undefined,
  ) {}

  /** Move to `state` with `input`. */
  static of<I>(state: StateRef<I>, ...input: InputArgs<I>): NextState {
    const stateId = stateIdOf(state);
    return new NextState(
      stateId,
      encodeOptional(`input of state ${JSON.stringify(stateId)}`, input[0]),
    );
  }
}

export type DecisionKind =
  | { readonly kind: "next"; readonly nextStates: readonly NextState[] }
  | {
      readonly kind: "close";
      readonly closeType: ThreadCloseType;
      readonly output: EncodedObject | undefined;
    };

/** The outcome of `execute`. */
export class StateDecision {
  private constructor(readonly decision: DecisionKind) {}

  /** Go on with `state` in this thread. */
  static singleNextState<I>(state: StateRef<I>, ...input: InputArgs<I>): StateDecision {
    return StateDecision.multipleNextStates(NextState.of(state, ...input));
  }

  /** Go on with several states, each its own thread, in parallel. */
  static multipleNextStates(...nextStates: NextState[]): StateDecision {
    return new StateDecision({ kind: "next", nextStates });
  }

  /** Complete the process with `output` once no other thread is running. */
  static gracefulCompleteProcess(output?: unknown): StateDecision {
    return StateDecision.close("GRACEFUL_COMPLETE_PROCESS", output);
  }

  /** Complete the process now with `output`, ending every other thread. */
  static forceCompleteProcess(output?: unknown): StateDecision {
    return StateDecision.close("FORCE_COMPLETE_PROCESS", output);
  }

  /** Fail the process now with `details`, ending every other thread. */
  static forceFailProcess(details?: unknown): StateDecision {
    return StateDecision.close("FORCE_FAIL_PROCESS", details);
  }

  /** End this thread only; the process goes on while other threads run. */
  static deadEnd(): StateDecision {
    return StateDecision.close("DEAD_END", undefined);
  }

  private static close(closeType: ThreadCloseType, output: unknown): StateDecision {
    return new StateDecision({
      kind: "close",
      closeType,
      output: encodeOptional("process output", output),
    });
  }

  /** The states this decision moves to (empty for a close). */
  get nextStates(): readonly NextState[] {
    return this.decision.kind === "next" ? this.decision.nextStates : [];
  }

  /** How the thread closes, if it does. */
  get closeType(): ThreadCloseType | undefined {
    return this.decision.kind === "close" ? this.decision.closeType : undefined;
  }
}
