import Foundation
import HubEngine
import HubRegistry
import HubTransport
import HubValue
import HubWire
import Logging

extension HubService {
    /// A snapshot of the service's connections, sessions and encoding cache.
    public struct Statistics: Sendable, Equatable {
        /// Open connections (counted against ``Configuration/maxConnections``).
        public var connections: Int
        /// Sessions whose connection has not closed yet.
        public var sessions: Int
        /// Live subscriptions over every session.
        public var subscriptions: Int
        /// Bytes queued for the open connections and not yet handed to their sockets.
        public var queuedBytes: Int
        /// Values whose JSON came from the shared encoding cache (a fanned-out value).
        public var encodingCacheHits: Int
        /// Values encoded for the shared encoding cache.
        public var encodingCacheMisses: Int
        /// `lws_write` calls on the service's connections since it started (closed ones
        /// included): fewer than ``messagesWritten`` when small messages share a write.
        public var writeCalls: Int
        /// Messages completely handed to the sockets since the service started.
        public var messagesWritten: Int
        /// Bytes the connections' buffers and pipelines hold now, as their budgets count
        /// them (``ResourceBudget``).
        public var heldBytes: Int = 0
        /// Timers the connections' pipelines run now.
        public var liveTimers: Int = 0
        /// Open sessions on each event loop, the hub's first (``Configuration/eventLoops``).
        public var loopSessions: [Int] = []
    }

    /// The current ``Statistics`` (all zero once the loop has stopped).
}
