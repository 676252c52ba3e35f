// The Node subscribers of scripts/bench-clients:
//   node bench-clients-js.mjs client URL N    N subscriptions of the JS client (clients/js/hub.js), default settings
//   node bench-clients-js.mjs raw URL N       N raw WebSocket subscribers in the plain form, demand unlimited
// Each on its own connection, to the subject "bench". Prints `ready`, then
// `T N F` (monotonic seconds, values received by all, failed subscriptions)
// every 50 ms until stdin closes, then `final N F`.

import { Hub } from "../clients/js/hub.js";

const [mode, url, countText] = process.argv.slice(2);
const count = Number(countText);
const counts = new Array(count).fill(0);
const failed = new Set();
const closers = [];

if (mode === "client") {
  const hubs = Array.from({ length: count }, () => new Hub(url, { reconnect: false }));
  const subscriptions = hubs.map((hub) => hub.subscribe("bench"));
  await Promise.all(subscriptions.map((s) => s.subscribed));
  subscriptions.forEach(async (subscription, index) => {
    try {
      for await (const _ of subscription) counts[index] += 1;
    } catch (error) {
      failed.add(index);
      process.stderr.write(`js subscriber ${index}: ${error.code}: ${error.message}\n`);
    }
  });
  for (const hub of hubs) closers.push(() => hub.close());
} else if (mode === "raw") {
  await Promise.all(
    counts.map(
      (_, index) =>
        new Promise((resolve, reject) => {
          const socket = new WebSocket(url, "hub.v1");
          socket.onopen = () =>
            socket.send(JSON.stringify({ op: "subscribe", id: 1, to: "bench", demand: "unlimited" }));
          socket.onmessage = (event) => {
            const message = JSON.parse(event.data);
            if (message.op === "next") counts[index] += Array.isArray(message.values) ? message.values.length : 1;
            else if (message.op === "subscribed") resolve();
            else if (message.op === "error") {
              failed.add(index);
              process.stderr.write(`raw subscriber ${index}: ${message.code}\n`);
              reject(new Error(message.code));
            }
          };
          socket.onclose = () => failed.add(index);
          closers.push(() => {
            socket.onclose = null;
            socket.close();
          });
        }),
    ),
  );
} else {
  process.stderr.write(`unknown mode ${mode}\n`);
  process.exit(2);
}

const total = () => counts.reduce((a, b) => a + b, 0);
console.log("ready");
const timer = setInterval(
  () => console.log(`${(performance.timeOrigin + performance.now()) / 1000} ${total()} ${failed.size}`),
  50,
);
process.stdin.resume();
process.stdin.on("end", async () => {
  clearInterval(timer);
  console.log(`final ${total()} ${failed.size}`);
  await Promise.allSettled(closers.map((close) => close()));
  process.exit(0);
});
