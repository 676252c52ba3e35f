import Foundation
import HubEngine
import HubRegistry
import HubTransport
import HubValue
import HubWire
import Logging

/// Applying a new configuration file to the running service.
extension ServiceCore {
    /// Applies `broker` (checked already): see ``HubService/reload(_:)``.
    func reload(_ broker: BrokerConfiguration) throws {
        // Every pipeline name must be free or a pipeline in the running hub.
        for pipeline in broker.pipelines {
            if let entry = hub.entry(named: pipeline.name), case .pipeline = entry {} else if let entry = hub.entry(named: pipeline.name) {
                throw ConfigurationError(
                    file: broker.file, at: pipeline.location, path: "pipelines.\(pipeline.name)",
                    message: "'\(pipeline.name)' is a \(entry.kindName) in the running broker")
            }
        }
        for subject in broker.subjects {
            if let entry = hub.entry(named: subject.name), case .subject = entry {} else if let entry = hub.entry(named: subject.name) {
                throw ConfigurationError(
                    file: broker.file, at: subject.location, path: "subjects.\(subject.name)",
                    message: "'\(subject.name)' is a \(entry.kindName) in the running broker")
            }
        }
        var restartNeeded: [String] = []
        let new = broker.service
        if new.host != configuration.host || new.port != configuration.port { restartNeeded.append("listen") }
        if new.tls != configuration.tls { restartNeeded.append("listen.tls") }
        if new.admin != configuration.admin { restartNeeded.append("admin") }
        if new.eventLoops != configuration.eventLoops { restartNeeded.append("listen.eventLoops") }
        if new.maximumWriteDelay != configuration.maximumWriteDelay { restartNeeded.append("listen.maxWriteDelay") }
        if !restartNeeded.isEmpty {
            logger.warning("reload: these settings need a restart", metadata: ["keys": "\(restartNeeded.joined(separator: ", "))"])
        }
        configuration.session = new.session
        configuration.hub = new.hub
        configuration.maxConnections = new.maxConnections
        configuration.maxUnauthenticated = new.maxUnauthenticated
        configuration.maxPendingHandshakes = new.maxPendingHandshakes
        admission.limits = ServiceCore.admissionLimits(configuration)
        authenticator = ServiceCore.authenticator(configuration.session, jwt: jwtVerifier)
        configuration.maxMessageSize = new.maxMessageSize
        configuration.drainGrace = new.drainGrace
        configuration.crossOrigin = new.crossOrigin
        hub.reconfigure(new.hub)
        if server != nil, !stopped { scheduleIdleSweep() }
        let (connectionLimit, handshakeLimit, perLoop) = (transportConnectionLimit, pendingHandshakeLimit, pendingHandshakesPerLoop)
        let limits = ServiceCore.connectionLimits(configuration)
        let update = { (server: WebSocketServer, handshakes: Int) in
            server.updateLimits(
                maximumConnections: connectionLimit, limits: limits,
                maximumPendingHandshakes: handshakes)
        }
        if let server { update(server, perLoop) }
        if let adminServer { update(adminServer, handshakeLimit) }
        for loop in connectionLoops {
            loop.promptWriteSize = limits.promptWriteSize
            loop.onServer { update($0, perLoop) }
        }
        var added = 0, replaced = 0, removed = 0, kept: [String] = []
        for subject in broker.subjects {
            if case .subject(let existing)? = hub.entry(named: subject.name) {
                let initial = subject.kind == .currentValue ? (subject.initial ?? .null) : nil
                if existing.kind != subject.kind || existing.initialValue != initial
                    || (subject.buffer.map { $0 != existing.bufferSize } ?? false)
                    || (subject.overflow.map { $0 != existing.overflow } ?? false)
                    || existing.schema != subject.schema || existing.table?.limits != subject.table {
                    kept.append(subject.name)
                }
                continue
            }
            _ = try? broker.declare(subject, in: hub)
            added += 1
        }
        for trigger in broker.triggers where hub.entry(named: trigger.name) == nil {
            _ = try? hub.declareTrigger(trigger.name)
            added += 1
        }
        let wanted = Set(broker.pipelines.map(\.name))
        for (name, entry) in hub.allEntries {
            if case .pipeline = entry, !wanted.contains(name) {
                hub.removePipeline(named: name)
                removed += 1
            }
        }
        for pipeline in broker.pipelines {
            if case .pipeline(let existing)? = hub.entry(named: pipeline.name) {
                if existing.source == pipeline.source, existing.isShared == pipeline.shared,
                    existing.bufferSize == pipeline.buffer, existing.overflow == pipeline.overflow,
                    existing.keepsCurrentValue == (pipeline.shared && pipeline.currentValue),
                    existing.failurePolicy == pipeline.onError, existing.runs == pipeline.runs,
                    existing.checkpoint == (pipeline.runs ? pipeline.checkpoint : nil) {
                    continue
                }
                hub.removePipeline(named: pipeline.name)
                replaced += 1
            } else {
                added += 1
            }
            do {
                try broker.declare(pipeline, in: hub)
            } catch {
                throw broker.pipelineError(error, pipeline)
            }
        }
        // New and replaced pipelines that run start now (the removed ones were stopped).
        do {
            try hub.startRunningPipelines()
        } catch {
            logger.error("reload: a running pipeline did not start", metadata: ["error": "\(error.message)"])
        }
        if !kept.isEmpty {
            logger.notice(
                "reload: subjects keep their old settings until deleted", metadata: ["subjects": "\(kept.joined(separator: ", "))"])
        }
        logger.notice(
            "configuration reloaded",
            metadata: ["file": "\(broker.file)", "added": "\(added)", "replaced": "\(replaced)", "removed": "\(removed)"])
        counters.emit("reload", [
            "file": .string(broker.file), "added": .int(Int64(added)), "replaced": .int(Int64(replaced)),
            "removed": .int(Int64(removed)),
        ])
    }
}
