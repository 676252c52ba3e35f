// Compiled (never run) by `tsc --noEmit`: the declarations in hub.d.ts describe
// the API as the README uses it.
import { ErrorCode, Hub, HubError, parseExactJSON, type Catalog, type JSONValue, type Subscription } from "../hub.js";

interface Price {
  bid: number;
}

export async function example(): Promise<void> {
  const hub = new Hub("ws://127.0.0.1:7420/", { token: "secret", reconnect: { initialDelay: 200, maxAttempts: 10 }, bigint: true });
  hub.addEventListener("disconnect", (event) => {
    const code: string = event.detail.code;
    console.log(code, event.detail.closeCode);
  });
  hub.addEventListener("reconnecting", (event) => console.log(event.detail.attempt, event.detail.delay));
  await hub.connect();
  await hub.send("prices", { bid: 101.5 });
  await hub.send("big", 9223372036854775807n);
  await hub.complete("prices");
  await hub.delete("prices");
  const position: { qty: number } | undefined = await hub.get<{ qty: number }>("positions", "AAPL");
  void position;
  await hub.fail("prices", { reason: "feed down" });
  await hub.trigger("refresh");
  await hub.trigger("refresh", { user: 7 });
  const catalog: Catalog = await hub.list();
  console.log(catalog.subjects.map((s) => `${s.name} ${s.kind} ${s.subscribers}`), catalog.pipelines, catalog.triggers);

  const prices: Subscription<Price> = hub.subscribe<Price>("prices", { prefetch: 16, buffer: 100, overflow: "latest" });
  const kind: "subject" | "pipeline" | "trigger" = await prices.subscribed;
  console.log(kind, prices.id, prices.delivered, prices.requested, prices.lastOffset);
  for await (const price of prices) {
    const bid: number = price.bid;
    if (bid > 100) break;
  }

  const manual = hub.subscribe({ pipeline: "prices | map(.bid)" }, { prefetch: 0, demand: 2 });
  manual.request(5);
  manual.request("unlimited");
  const step = await manual.next();
  if (!step.done) console.log(step.value);
  manual.cancel();
  await manual.done;

  const stream: ReadableStream<JSONValue> = hub.subscribe("prices").readable;
  await stream.pipeTo(new WritableStream({ write: (value) => console.log(value) }));

  try {
    await hub.send("prices", 1);
  } catch (error) {
    if (error instanceof HubError && error.code === ErrorCode.COMPLETED) console.log(error.message, error.data, error.fromServer);
  }
  const value: JSONValue = parseExactJSON("[1, 9007199254740993]");
  console.log(value, hub.state, hub.session, hub.url);
  await hub.close();

  const cluster = new Hub(["ws://10.0.0.1:7420/", "ws://10.0.0.2:7420/"], { reconnect: { maxDelay: 2000 } });
  const urls: string[] = cluster.urls;
  console.log(cluster.url, urls.length);
  await cluster.close();
}
