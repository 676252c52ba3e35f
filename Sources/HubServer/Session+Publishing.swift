import HubEngine
import HubValue
import HubWire
import HubPipeline
import HubRegistry
import Logging

/// The operations that publish: `send`, and the acked two-step requests.
extension Session {
    /// Runs a request in two steps: `check` validates and returns the effect; the
    /// `ack` (if any) is queued before the effect runs, so that it precedes the
    /// messages the effect causes on this connection (PROTOCOL.md §3).
    func perform(ack: Int64?, _ check: () throws(HubError) -> () -> Void) {
        let effect: () -> Void
        do {
            effect = try check()
        } catch {
            sendError(error, id: nil, ack: ack)
            return
        }
        if let ack { outbound.send(.ack(ack)) }
        effect()
    }

    /// `send`: the ack precedes the value's delivery. A subject with history stores the
    /// value first, so its ack (or the store's error) comes once it is stored
    /// (PROTOCOL.md §10), possibly after the acks of later requests to other subjects.
    func send(_ value: Value, to name: String, ack: Int64?) {
        let subject: HubSubject
        let sender = self.sender
        do {
            try checkWritable(name, doing: "send to")
            subject = try hub.openSubject(named: name)
            try hub.validate(value, for: subject, sender: sender)
        } catch {
            sendError(error, id: nil, ack: ack)
            return
        }
        // A subject whose buffers are full slows its publishers down (`overflow: block`).
        defer { brake.hold(until: subject.congestion) }
        guard subject.history != nil else {
            if let ack { outbound.send(.ack(ack)) }
            hub.publish(value, to: subject, sender: sender)
            return
        }
        let bytes = value.estimatedBytes
        storing += 1
        storingBytes += bytes
        if storing >= Session.maxStoring || storingBytes >= Session.maxStoringBytes { brake.holdForStore() }
        hub.publish(value, to: subject, sender: sender) { [weak self] result in
            guard let self else { return }
            self.storing -= 1
            self.storingBytes -= bytes
            if self.brake.isHoldingForStore, self.storing <= Session.maxStoring / 2,
                self.storingBytes <= Session.maxStoringBytes / 2
            {
                self.brake.releaseStore()
            }
            switch result {
            case .success(let offset):
                self.lastStoredOffset = offset
                if let ack { self.outbound.send(.ack(ack)) }
            case .failure(let error):
                self.sendError(error, id: nil, ack: ack)
            }
        }
    }

    /// Who a session sends as: its id, and the client's name from `hello` when it gave one.
    static func sender(id: String, clientName: String?) -> String {
        guard let clientName else { return "session \(id)" }
        return "session \(id) (client \(Value.string(clientName).jsonString()))"
    }
}
