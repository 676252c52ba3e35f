import Foundation
import HubEngine
import HubRegistry
import HubTransport
import HubValue
import HubWire
import Logging

extension HubService {
    /// Where the service listens and how it behaves.
    public struct Configuration: Sendable {
        /// The address to listen on.
        public var host: String
        /// The port to listen on; 0 picks a free one.
        public var port: Int
        /// The hub's behaviour (auto-creation, buffers, pipeline limits).
        public var hub: Hub.Configuration
        /// The sessions' behaviour (limits, auth).
        public var session: SessionConfiguration
        /// The largest inbound message; larger ones close the connection with 1009.
        public var maxMessageSize: Int
        /// The most simultaneous authenticated connections (every connection, on a server
        /// without auth); more are closed with 4429. Connections still waiting to
        /// authenticate are not counted: see ``maxUnauthenticated``.
        public var maxConnections: Int
        /// The most connections waiting to authenticate at once: beyond it, a newcomer
        /// displaces the one that has waited longest (closed with 4401).
        public var maxUnauthenticated: Int = 1000
        /// Seconds between keepalive pings of an idle connection (0: none).
        public var pingInterval: UInt16
        /// Seconds without an answer to pings before a connection is dropped.
        public var idleTimeout: UInt16
        /// Seconds a new connection may take to send its upgrade request before it is
        /// dropped (sockets that never send one would hold a descriptor meanwhile).
        public var handshakeTimeout: UInt16 = 5
        /// The most accepted sockets waiting to send their upgrade or HTTP request: a
        /// newcomer beyond it closes the one that has waited longest (sockets that
        /// connect and send nothing could otherwise hold every descriptor).
        public var maxPendingHandshakes: Int = 1000
        /// The certificate and private key to serve `wss://` with; `nil` serves `ws://`.
        public var tls: TLSConfiguration?
        /// How long a lame-duck drain (SIGUSR2, `hubcli drain`) takes to close every
        /// connection (spread over it) when the request names no grace period.
        public var drainGrace: Duration = .seconds(30)
        /// How often `$sys.stats` and `$sys.connections` are published.
        public var statsInterval: Duration = .seconds(1)
        /// Which other origins' pages may call the HTTP API from a browser
        /// (configuration `http.cors.origins`): none by default.
        public var crossOrigin = CrossOriginPolicy.sameOriginOnly
        /// A separate plain-HTTP (and WebSocket) listener for operators: `/metrics`, the
        /// dashboard and its connection; `nil` serves them on the main port. With one, the
        /// main port keeps only WebSocket, `/health` and `/ready`.
        public var admin: AdminListener?
        /// Where durable subjects are stored (configuration `storage`: HubSQLite's
        /// `SQLiteStorage` in `hubcli`), opened when the service starts; `nil`: no subject
        /// may be durable.
        public var storage: (any DurableStorage)?
        /// The event loops that serve connections (configuration `listen.eventLoops`; at
        /// least 1). The first is the hub's loop: every subject, pipeline and session
        /// lives there, and it listens and serves connections too. It hands the sockets it
        /// accepts to the loops in turn, itself first; each other loop does its
        /// connections' socket work (reads, WebSocket framing, TLS, writes), and their
        /// sessions' messages cross to and from the hub's loop in one batch per loop and
        /// pass. 1 (the default here; `hubcli serve` defaults to the cores it may use)
        /// serves everything on the hub's loop.
        public var eventLoops: Int = 1

        /// The event loops a service may run (``eventLoops``).
        public static let eventLoopRange = 1...256

        /// The longest a heavy fan-out's writes wait to be batched (configuration
        /// `listen.maxWriteDelay`). Every loop holds its writes while messages stream in,
        /// 500 µs at first; while each connection waiting to be written gets at least
        /// two messages per 500 µs, the hold doubles, up to this, and shrinks again when
        /// the stream slows (``EventLoop/Configuration/writeCoalescingStreamingDelay``).
        /// Longer holds cost the broker, and a subscriber busy keeping up, fewer writes
        /// and reads per message, for a few milliseconds of latency under such a load. A
        /// value at or below 500 µs keeps the hold at 500 µs.
        public var maximumWriteDelay: Duration = .milliseconds(3)

        /// Whether the event loops measure the CPU time of each service pass, for
        /// `/metrics` (`hub_event_loop_pass_cpu_max_seconds`): a system call per pass,
        /// so off by default.
        public var measuresPassCPUTime = false

        /// The values ``maximumWriteDelay`` may take.
        public static let maximumWriteDelayRange: ClosedRange<Duration> = .zero ... .seconds(1)

        /// The configuration of the event loop called `name`.
        func eventLoopConfiguration(name: String) -> EventLoop.Configuration {
            var loop = EventLoop.Configuration(name: name, writeCoalescingStreamingDelay: maximumWriteDelay)
            loop.measuresPassCPUTime = measuresPassCPUTime
            return loop
        }

        /// The cores the calling thread may run on (its CPU affinity, as `taskset` sets it
        /// for a process): the event loops `hubcli serve` runs by default.
        /// `ProcessInfo.activeProcessorCount` counts every online core, affinity or not,
        /// and Swift's Glibc module does not export `sched_getaffinity`: the mask is read
        /// from `/proc/thread-self/status` (`Cpus_allowed:`, hexadecimal words).
        public static var availableCores: Int {
            let cores = (try? String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8))
                .flatMap(allowedCores(inStatus:)) ?? ProcessInfo.processInfo.activeProcessorCount
            return min(eventLoopRange.upperBound, max(1, cores))
        }

        /// The cores of the `Cpus_allowed:` mask in a `/proc/…/status` text; `nil` without one.
        static func allowedCores(inStatus status: String) -> Int? {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed:") }) else {
                return nil
            }
            var cores = 0
            for word in line.dropFirst("Cpus_allowed:".count).split(separator: ",") {
                guard let bits = UInt64(word.trimmingCharacters(in: .whitespaces), radix: 16) else { return nil }
                cores += bits.nonzeroBitCount
            }
            return cores
        }

        /// Where the admin listener listens.
        public struct AdminListener: Sendable, Hashable {
            /// The address (keep it private: it serves plain HTTP).
            public var host: String
            /// The port; 0 picks a free one (``HubService/adminPort``).
            public var port: Int

            /// A listener on `host:port`.
            public init(host: String = "127.0.0.1", port: Int) {
                self.host = host
                self.port = port
            }
        }

        /// The embedded defaults: 127.0.0.1:7420, 1 MiB messages, 10,000 connections, no TLS.
        public init(
            host: String = "127.0.0.1", port: Int = 7420,
            hub: Hub.Configuration = Hub.Configuration(), session: SessionConfiguration = SessionConfiguration(),
            maxMessageSize: Int = 1 << 20, maxConnections: Int = 10_000,
            pingInterval: UInt16 = 30, idleTimeout: UInt16 = 60, tls: TLSConfiguration? = nil
        ) {
            self.tls = tls
            self.host = host
            self.port = port
            self.hub = hub
            self.session = session
            self.maxMessageSize = maxMessageSize
            self.maxConnections = maxConnections
            self.pingInterval = pingInterval
            self.idleTimeout = idleTimeout
        }
    }
}
