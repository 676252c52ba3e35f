import Foundation
import HubEngine
import HubRegistry
import HubTransport
import HubValue
import HubWire
import Logging

/// The service's figures: statistics, the metrics' snapshot, the connections of `$sys.connections`.
extension ServiceCore {
    /// Open sessions on each loop, the hub's first (whatever the connection loops do not
    /// serve, the admin listener's included).
    var loopSessions: [Int] {
        let relayed = connectionLoops.map(\.sessionCount)
        return [handlers.count - relayed.reduce(0, +)] + relayed
    }

    var statistics: HubService.Statistics {
        let sessions = handlers.values.compactMap(\.session)
        var writeCalls = closedWriteCalls
        var messagesWritten = closedMessagesWritten
        for handler in handlers.values {
            writeCalls += handler.writeCalls
            messagesWritten += handler.messagesWritten
        }
        return HubService.Statistics(
            connections: openConnections,
            sessions: sessions.count,
            subscriptions: sessions.reduce(0) { $0 + $1.subscriptionCount },
            queuedBytes: handlers.values.reduce(0) { $0 + $1.queuedBytes },
            encodingCacheHits: encodingCache.hits,
            encodingCacheMisses: encodingCache.misses,
            writeCalls: writeCalls, messagesWritten: messagesWritten,
            heldBytes: sessions.reduce(0) { $0 + $1.budget.heldBytes },
            liveTimers: sessions.reduce(0) { $0 + $1.budget.liveTimers },
            loopSessions: loopSessions)
    }

    /// The loop's figures now: cumulative counters and current gauges (the lag since
    /// `consumer` last asked).
    func snapshot(for consumer: LoopLagMonitor.Consumer) -> MetricsSnapshot {
        var snapshot = MetricsSnapshot()
        snapshot.connections = openConnections
        snapshot.connectionsOpened = counters.connectionsOpened
        snapshot.loopSessions = loopSessions
        // One pass over the connections (this runs every second for $sys.stats, with
        // tens of thousands of connections open).
        snapshot.bytesReceived = counters.closedBytesReceived
        snapshot.bytesSent = counters.closedBytesSent
        for handler in handlers.values {
            snapshot.subscriptions += handler.session?.subscriptionCount ?? 0
            snapshot.queuedBytes += handler.queuedBytes
            snapshot.bytesReceived += handler.bytesReceived
            snapshot.bytesSent += handler.bytesSent
        }
        snapshot.slowConsumerCloses = counters.slowConsumerCloses
        snapshot.authFailures = counters.authFailures
        snapshot.protocolErrors = counters.protocolErrors
        snapshot.pipelineFailures = counters.pipelineFailures
        snapshot.rateLimitCloses = counters.rateLimitCloses
        snapshot.connectionRefusals = counters.connectionRefusals
        let metrics = hub.metrics
        snapshot.published = metrics.published
        snapshot.activations = metrics.activations
        snapshot.dropped = metrics.dropped
        snapshot.overflows = metrics.overflows
        snapshot.namedPipelineFailures = metrics.namedPipelineFailures
        for (name, entry) in hub.allEntries where !HubName.isSystem(name) {
            snapshot.namesByKind[entry.kindName, default: 0] += 1
        }
        for counters in metrics.allCounters {
            snapshot.delivered += counters.delivered
            var figures = MetricsSnapshot.NameFigures(
                name: counters.name, kind: counters.kind ?? hub.entry(named: counters.name)?.kindName ?? "shared")
            figures.published = counters.published
            figures.delivered = counters.delivered
            figures.dropped = counters.dropped
            figures.overflows = counters.overflows
            snapshot.names[counters.name] = figures
        }
        if consumer == .metrics {
            snapshot.connectionLoopLagMaximum = connectionLoops.map { $0.lag.take() }
            if let hubLoop = eventLoop.takeLongestPassCPUTime() {
                snapshot.loopPassCPUMaximum = [hubLoop] + connectionLoops.map { $0.eventLoop.takeLongestPassCPUTime() ?? .zero }
            }
        }
        let lag = lagMonitor.takeWindow(for: consumer)
        snapshot.loopLagMaximum = lag.maximum
        snapshot.loopLagSamples = lag.samples
        return snapshot
    }

    /// The open connections, for `$sys.connections`.
    var connectionFigures: [SystemSubjects.ConnectionFigures] {
        handlers.values.compactMap { handler in
            guard let session = handler.session, !session.isClosed else { return nil }
            return SystemSubjects.ConnectionFigures(
                session: session.id, peer: handler.peer, client: session.clientName,
                authenticated: session.isAuthenticated, identity: session.identity?.name, since: handler.openedAt,
                subscriptions: session.subscriptionCount, queuedBytes: handler.queuedBytes,
                bytesIn: handler.bytesReceived, bytesOut: handler.bytesSent)
        }
    }
}
