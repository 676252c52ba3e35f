// The tests' WebSocket: the global one (browsers, Node >= 22, Node 20/21 with
// --experimental-websocket), else Debian's node-ws (`ws`, found through
// NODE_PATH=/usr/share/nodejs), which the client also accepts as
// `options.WebSocket`.

import { createRequire } from "node:module";

if (typeof globalThis.WebSocket !== "function") {
  globalThis.WebSocket = createRequire(import.meta.url)("ws");
}
