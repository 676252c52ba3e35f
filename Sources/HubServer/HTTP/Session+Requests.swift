import HubRegistry
import HubValue
import HubWire

/// What the HTTP API asks of a ``Session`` besides the protocol's messages: an operation
/// already decoded, a check of values before any is sent, and a subject's latest value.
/// The checks are the session's own (rate limits, authentication, permissions), so that
/// an HTTP request follows the same rules as a WebSocket message.
extension Session {
    /// Handles one protocol message that came decoded (an HTTP request's operation) as
    /// ``receive(text:)`` handles a frame's: within the rate limits (counting `bytes`),
    /// refused before authentication, then dispatched.
    func receive(_ message: ClientMessage, bytes: Int) {
        guard !isClosed, withinRate(bytes: bytes) else { return }
        if let refusal = auth.received(isHello(message) ? .hello : .message) {
            carryOut(refusal)
            return
        }
        handle(message)
    }

    /// Checks that `values` may be sent to the subject `name` (permission, an open
    /// subject, its schema), all of them, before any is: throws the first refusal.
    func checkSending(_ values: [Value], to name: String) throws(HubError) {
        try checkWritable(name, doing: "send to")
        let subject = try hub.openSubject(named: name)
        for value in values {
            try hub.validate(value, for: subject, sender: sender)
        }
    }

    /// The latest value of the subject `name`, with its offset and epoch when it has
    /// history; `nil` when it has none. Needs the `subscribe` permission (`admin` for a
    /// system subject); a name that is not there is `not_found` (nothing is created).
    func latestValue(of name: String) throws(HubError) -> (value: Value, offset: UInt64?, epoch: String?)? {
        if let problem = HubName.problem(with: name) {
            throw HubError(.badMessage, "invalid name '\(name)': \(problem)")
        }
        if HubName.isSystem(name) {
            try checkAdmin(name, "reading '\(name)'")
            service?.refreshSystemSubjects()
        } else {
            try permit(.subscribe, name, doing: "read")
        }
        switch hub.entry(named: name) {
        case .subject(let subject):
            if let history = subject.history {
                return history.latestEntry.map { ($0.value, $0.offset, history.epoch) }
            }
            return subject.currentValue.map { ($0, nil, nil) }
        case .some(let other):
            throw HubError(.notFound, "'\(name)' is a \(other.kindName), not a subject")
        case nil:
            throw HubError(.notFound, "no subject named '\(name)'")
        }
    }
}
