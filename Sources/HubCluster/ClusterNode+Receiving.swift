import Foundation
import HubEngine
import HubLoop
import HubRegistry
import HubValue
import HubWire
import Logging

/// Events from NATS (on the loop): values, activations, control messages and catalogs
/// of the other nodes, and the connection's state.
extension ClusterNode {
    func handle(_ batch: [ClusterInbox.Event]) {
        guard !isStopped else { return }
        for event in batch {
            switch event {
            case .connection(let state):
                connectionChanged(state)
            case .currentValues(let reads):
                applyCurrentValues(reads)
            case .leases(let outcome):
                applyLeases(outcome)
            case .message(let route, let message):
                let origin = message.headers[ClusterSubjectNames.originHeader] ?? "?"
                guard origin != configuration.nodeName else { continue }
                switch route {
                case .values(let name): receiveValue(message.payload, for: name, from: origin)
                case .activations(let name): receiveActivation(message.payload, of: name, from: origin)
                case .control: receiveControl(message, from: origin)
                case .catalog: receiveCatalog(message.payload, from: origin)
                }
            }
        }
    }

    func connectionChanged(_ state: ConnectionState) {
        switch state {
        case .connected, .reconnected:
            logger.notice("connected to NATS", metadata: ["state": "\(state.rawValue)", "server": "\(connection?.connectedURL ?? "?")"])
            broadcastCatalog()
            readCurrentValues()
            renewLeases()
        case .disconnected:
            logger.warning("lost NATS: serving local clients only until it is back")
        case .closed:
            logger.notice("NATS connection closed")
        }
    }

    func receiveValue(_ payload: [UInt8], for name: String, from origin: String) {
        guard let value = try? Value.parse(payload) else {
            logger.notice("unreadable value from the cluster", metadata: ["subject": "\(name)", "from": "\(origin)"])
            return
        }
        hub.applyingClusterEvent(to: name) {
            guard case .subject(let subject) = hub.entry(named: name), !subject.isCompleted, subject.history == nil else {
                return
            }
            if subject.kind == .currentValue { valueGenerations[name, default: 0] &+= 1 }
            hub.publish(value, to: subject, sender: "node \(origin)")
        }
    }

    func receiveActivation(_ payload: [UInt8], of name: String, from origin: String) {
        let key: Value? = payload.isEmpty ? nil : try? Value.parse(payload)
        hub.applyingClusterEvent(to: name) {
            guard case .trigger(let trigger) = hub.entry(named: name) else { return }
            hub.activate(trigger, key: key)
        }
    }

    func receiveControl(_ message: NATSMessage, from origin: String) {
        guard let name = message.headers[ClusterSubjectNames.nameHeader], HubName.isValid(name), !HubName.isSystem(name),
              let operation = message.headers[ClusterSubjectNames.operationHeader]
        else { return }
        hub.applyingClusterEvent(to: name) {
            switch operation {
            case "complete", "fail":
                // A name this node does not know yet is made (when the hub makes names on
                // first use), so that a later send here is refused as it is everywhere.
                guard let subject = try? hub.subject(named: name), !subject.isCompleted else { return }
                // (Not a ternary: Value is nil-literal expressible, so `: nil` would be .null.)
                var error: Value? = .none
                if operation == "fail" { error = .some((try? Value.parse(message.payload)) ?? .null) }
                guard let store = jetStreamStore(of: subject),
                      let through = message.headers[ClusterSubjectNames.throughHeader].flatMap(UInt64.init)
                else {
                    return hub.finish(subject, error: error)
                }
                // Subscribers here get the stream's values up to the end first.
                store.catchUp(subject: name, through: through) { [weak self] in
                    guard let self, case .subject(let current) = hub.entry(named: name), current === subject,
                          !subject.isCompleted
                    else { return }
                    hub.applyingClusterEvent(to: name) { hub.finish(subject, error: error) }
                }
            case "delete":
                guard case .subject = hub.entry(named: name) else { return }
                try? hub.delete(name)
                logger.info("subject deleted by another node", metadata: ["subject": "\(name)", "from": "\(origin)"])
            default:
                return
            }
        }
    }

    func receiveCatalog(_ payload: [UInt8], from origin: String) {
        guard case .catalog(_, let catalog)? = try? ServerMessage.decode(payload) else { return }
        remoteCatalogs.record(catalog, from: origin, at: MonotonicClock.nanoseconds())
    }
}
