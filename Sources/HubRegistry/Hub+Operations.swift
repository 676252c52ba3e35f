import HeapModule
import HubEngine
import HubValue
import HubWire
import HubPipeline
import Logging
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The protocol's operations on names: send, complete, fail, delete, trigger.
extension Hub {
    /// The subject `name` if it is still open: `completed` once it has finished.
    public func openSubject(named name: String) throws(HubError) -> HubSubject {
        let subject = try subject(named: name)
        guard !subject.isCompleted else { throw HubError(.completed, "subject '\(name)' has completed") }
        return subject
    }

    /// Publishes `value` into the subject `to`, after checking it against the subject's
    /// schema (`invalid_value`, logged with `sender`, when it does not match).
    public func send(_ value: Value, to name: String, sender: String? = nil) throws(HubError) {
        let subject = try openSubject(named: name)
        try validate(value, for: subject, sender: sender)
        publish(value, to: subject, sender: sender)
    }

    /// Throws `invalid_value` (and logs it with `sender`) when `subject` has a schema that
    /// `value` does not match: the message and `data` say where in the value and why.
    /// A table subject also refuses a value that is not a change (`invalid_value`) and one
    /// it has no room for (`limit_exceeded`).
    public func validate(_ value: Value, for subject: HubSubject, sender: String?) throws(HubError) {
        if let table = subject.table { _ = try table.validate(value) }
        guard let schema = subject.schema, let problem = schema.validate(value) else { return }
        let error = Hub.refusal(problem, subject: subject.name, what: "value")
        logger.warning("value refused by the subject's schema", metadata: [
            "subject": "\(subject.name)", "sender": "\(sender ?? "unknown")", "path": "\(problem.path)",
            "error": "\(problem.message)",
        ])
        throw error
    }

    static func refusal(_ problem: JSONSchema.ValidationError, subject: String, what: String) -> HubError {
        HubError(
            .invalidValue, "subject '\(subject)' refuses the \(what): \(problem.path): \(problem.message)",
            data: [
                "path": .string(problem.path), "keyword": .string(problem.keyword),
                "schemaPath": .string(problem.schemaPath), "error": .string(problem.message),
            ])
    }

    /// Publishes `value` into `subject` (resolved with ``openSubject(named:)`` and checked with
    /// ``validate(_:for:sender:)``); `sender` is the value's ``origin`` while it propagates.
    /// A subject with history stores it first (see the next method).
    public func publish(_ value: Value, to subject: HubSubject, sender: String? = nil) {
        publish(value, to: subject, sender: sender, whenStored: nil)
    }

    /// Publishes `value` into `subject`; `whenStored` runs before the subscribers get
    /// it: at once without history (with `nil`), else once it is stored (with its offset)
    /// or could not be (with the store's error, and the value goes nowhere). This is
    /// how a `send` with `ack` is acknowledged only once its value is stored.
    public func publish(
        _ value: Value, to subject: HubSubject, sender: String? = nil,
        whenStored: ((Result<UInt64?, HubError>) -> Void)?
    ) {
        var subject = subject
        if subject.isRemoved {
            // Forgotten as idle while its holder (a pipeline's `into`) was quiet: the
            // value goes to the subject of that name now, created anew if need be.
            guard let live = try? self.subject(named: subject.name) else { return }
            subject = live
        }
        subject.wasUsed = true
        metrics.published += 1
        subject.counters.published &+= 1
        if let clusterLink, subject.name != clusterEventName, subject.history == nil, !HubName.isSystem(subject.name) {
            clusterLink.hub(self, published: value, to: subject)
        }
        var whenStored = whenStored
        if whenStored == nil, subject.table != nil {
            // A table may refuse a value that was checked before it was published (a running
            // pipeline's outputs wait for its checkpoint, other changes may fill the table
            // meanwhile): no sender hears of it, the log does.
            let (logger, name) = (self.logger, subject.name)
            whenStored = { result in
                guard case let .failure(error) = result else { return }
                logger.warning("table refused a change", metadata: [
                    "subject": "\(name)", "sender": "\(sender ?? "unknown")", "error": "\(error.message)",
                ])
            }
        }
        let previous = origin.sender
        origin.sender = sender
        subject.send(value, whenStored: whenStored)
        origin.sender = previous
    }

    /// The store a subject's history goes to: the durable one, or the memory one.
    func store(durable: Bool, for name: String) throws(HubError) -> any SubjectStore {
        guard durable else { return historyStore }
        guard let durableStore else {
            throw HubError(.badMessage, "subject '\(name)' is durable, but the hub has no durable store (storage.path)")
        }
        return durableStore
    }

    /// Deletes the subject `name` so that it can start over (a completed or failed subject
    /// takes no more values until then): its live subscribers get `complete` (after their
    /// buffered values), and a declared subject is replaced by a fresh one with the same
    /// settings (its initial value again); one created on first use is removed (the next
    /// use creates it anew). A trigger's or pipeline's name is `not_found`; a system
    /// subject is `forbidden`.
    public func delete(_ name: String) throws(HubError) {
        try Hub.check(name)
        if HubName.isSystem(name) { throw HubError(.forbidden, "the system subject '\(name)' cannot be deleted") }
        switch entries[name] {
        case .subject(let subject):
            entries[name] = nil
            if !subject.isCompleted { subject.send(completion: .finished) }
            // Its history goes too: the next subject of that name begins a new epoch. A
            // delete made on another node of a cluster removed the shared history there:
            // this node lets go of its log.
            if let history = subject.history {
                let store = try store(durable: history.isDurable, for: name)
                if name == clusterEventName {
                    try store.forgetLog(subject: name)
                } else {
                    try store.removeLog(subject: name)
                }
            }
            if let clusterLink, name != clusterEventName { clusterLink.hub(self, deleted: subject) }
            if subject.isDeclared {
                let fresh = try createSubject(
                    name, initialValue: subject.initialValue, bufferSize: subject.bufferSize, overflow: subject.overflow,
                    schema: subject.schema, history: subject.history?.retention, durable: subject.history?.isDurable ?? false,
                    table: subject.table?.limits)
                fresh.isDeclared = true
            }
        case .some(let other):
            throw HubError(.notFound, "'\(name)' is a \(other.kindName), not a subject")
        case nil:
            throw HubError(.notFound, "no subject named '\(name)'")
        }
    }

    /// Finishes the subject `name`: its subscribers get `complete` after their buffered values.
    public func complete(_ name: String) throws(HubError) {
        finish(try openSubject(named: name), error: nil)
    }

    /// Fails the subject `name` with the JSON value `error`.
    public func fail(_ name: String, error: Value) throws(HubError) {
        finish(try openSubject(named: name), error: error)
    }

    /// Completes `subject` (`error` nil) or fails it with `error`, and tells the cluster.
    public func finish(_ subject: HubSubject, error: Value?) {
        if let clusterLink, subject.name != clusterEventName, !HubName.isSystem(subject.name) {
            clusterLink.hub(self, finished: subject, error: error)
        }
        if let error { subject.fail(with: error) } else { subject.send(completion: .finished) }
    }

    /// Activates the trigger `name`, for `key` if given.
    public func activate(_ name: String, key: Value?) throws(HubError) {
        activate(try trigger(named: name), key: key)
    }

    /// Activates `trigger` (resolved with ``trigger(named:)``), for `key` if given.
    public func activate(_ trigger: HubTrigger, key: Value?) {
        if let clusterLink, trigger.name != clusterEventName { clusterLink.hub(self, activated: trigger, key: key) }
        metrics.activations += 1
        trigger.counters.published &+= 1
        trigger.activate(key: key)
    }
}
