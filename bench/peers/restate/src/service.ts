// Restate's side of `xdb-bench --peers`: the workloads XDB's bench runs, as a Restate
// service served over HTTP/2 on PORT (registered by the bench via the admin API).
import * as restate from "@restatedev/restate-sdk";

// The SDK calls Promise.withResolvers (Node 22); Debian's Node is 20. Handlers run after
// this module's body, so defining it here is in time.
interface Resolvers<T> {
  promise: Promise<T>;
  resolve: (value: T | PromiseLike<T>) => void;
  reject: (reason?: unknown) => void;
}
const promiseStatics = Promise as unknown as { withResolvers?: () => Resolvers<unknown> };
promiseStatics.withResolvers ??= () => {
  let resolve!: Resolvers<unknown>["resolve"];
  let reject!: Resolvers<unknown>["reject"];
  const promise = new Promise<unknown>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};

const bench = restate.service({
  name: "bench",
  handlers: {
    // XDB's two-state process: two durable steps, each returning at once.
    twoStep: async (ctx: restate.Context): Promise<string> => {
      await ctx.run("a", () => "a");
      await ctx.run("b", () => "b");
      return "done";
    },
    // XDB's timer process: one 1-second durable timer, then done.
    sleep: async (ctx: restate.Context): Promise<string> => {
      await ctx.sleep(1000);
      return "slept";
    },
  },
});

const port = Number(process.env.PORT ?? "9080");
restate
  .endpoint()
  .bind(bench)
  .listen(port)
  .then((bound) => console.log(`restate bench endpoint on ${bound}`))
  .catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
