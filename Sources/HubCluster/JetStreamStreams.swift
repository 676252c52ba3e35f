import CNATS
import Foundation
import HubRegistry
import HubValue
import HubWire

/// The blocking JetStream requests of a ``JetStreamStore``, made on the store's worker
/// thread only (never on the hub's loop, except ``JetStreamStore/openLog(subject:retention:)``):
/// one stream per subject, created or bound, updated, deleted; stored publishes that
/// wait for the server's ack; reads by direct gets, one message at a time, bounded by
/// the caller's page.
///
/// Each stored message is a value's JSON with the header ``timeHeader``: the hub's
/// clock when the value was appended (nanoseconds since 1970), which reads compare
/// with the subject's ttl (the stream's own `max_age` trims by the server's clock).
final class JetStreamStreams: @unchecked Sendable {
    /// The header carrying a value's append time, nanoseconds since 1970.
    static let timeHeader = "Hub-Time"
    /// The header naming the store that stored a value (a follower skips its own).
    static let writerHeader = "Hub-Writer"
    /// The prefix of a stream's description before its epoch.
    static let epochPrefix = "hub-epoch:"

    /// What a stream holds when it is bound: the log's starting point.
    struct Opened: Sendable {
        var epoch: String
        var lastSequence: UInt64
        var lastValue: Value?
        var lastTime: Int64
        /// A table's stream (``HistoryRetention/keepsLatestPerKey``): the change of each
        /// live key, by key (the stream holds one message per key).
        var rows: [String: HistoryEntry] = [:]
    }

    /// The header numbering a value within its group of stored publishes ("group:index").
    static let appendHeader = "Hub-Append"

    /// The JetStream context (thread-safe in libnats).
    let context: OpaquePointer
    /// Destroys the connection's ended subscriptions (the followers' consumers).
    let reaper: NATSSubscriptionReaper
    /// This store's id in the ``writerHeader`` of what it stores.
    let writer = MemoryStore.newEpoch()
    private let wait: Int64
    /// Collects the acks of a group of stored publishes (on libnats's thread).
    private let acks = GroupAcks()
    /// The number of the group being published (worker only).
    private var group: UInt64 = 0

    /// A JetStream context on `connection` whose requests wait `timeout` at most.
    init(connection: NATSConnection, timeout: Duration) throws(NATSError) {
        var options = jsOptions()
        jsOptions_Init(&options)
        let (seconds, attoseconds) = timeout.components
        wait = max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        options.Wait = wait
        options.PublishAsync.AckHandler = { _, message, ack, failure, closure in
            guard let closure else { return natsMsg_Destroy(message) }
            Unmanaged<GroupAcks>.fromOpaque(closure).takeUnretainedValue().received(message, ack, failure)
        }
        options.PublishAsync.AckHandlerClosure = Unmanaged.passUnretained(acks).toOpaque()
        var context: OpaquePointer?
        let status = natsConnection_JetStream(&context, connection.connection, &options)
        guard status == NATS_OK, let context else {
            throw NATSError(.connectFailed, doing: "opening JetStream", status: status)
        }
        self.context = context
        reaper = connection.reaper
    }

    deinit {
        jsCtx_Destroy(context)
    }

    /// Binds the stream `stream` on `subject`, creating it with a new epoch when the server
    /// has none, and applying `retention` (max_msgs, max_age) when it differs.
    ///
    /// A table's stream (`retention.keepsLatestPerKey`, `subject` the wildcard of its keys'
    /// subjects) keeps the last message of each key instead (`max_msgs_per_subject: 1`, no
    /// `max_msgs`, no `max_age`: dropping by count or age would lose keys); its messages,
    /// one per key, are read when it is bound: the table's rows.
    func open(stream: String, subject: String, retention: HistoryRetention, storage: JetStreamStore.Storage) throws(NATSError) -> Opened {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var errorCode = jsErrCode(0)
        var status = js_GetStreamInfo(&info, context, stream, nil, &errorCode)
        if status == NATS_NOT_FOUND {
            status = configure(stream: stream, subject: subject, retention: retention, storage: storage,
                               epoch: MemoryStore.newEpoch(), update: false, info: &info)
            if status != NATS_OK {
                // Another node may have created it meanwhile: bind to that one.
                let created = NATSError(.jetStreamFailed, doing: "creating the stream \(stream)", status: status)
                status = js_GetStreamInfo(&info, context, stream, nil, &errorCode)
                guard status == NATS_OK else { throw created }
            }
        }
        guard status == NATS_OK, let found = info else {
            throw NATSError(.jetStreamFailed, doing: "reading the stream \(stream)", status: status)
        }
        var current = found
        defer { jsStreamInfo_Destroy(current) }
        let epoch = Self.epoch(of: current)
        let limits = Self.limits(retention)
        if let config = current.pointee.Config,
           config.pointee.MaxMsgs != limits.maxMsgs || config.pointee.MaxAge != limits.maxAge
            || config.pointee.MaxMsgsPerSubject != limits.perSubject {
            var updated: UnsafeMutablePointer<jsStreamInfo>?
            status = configure(stream: stream, subject: subject, retention: retention,
                               storage: config.pointee.Storage == js_MemoryStorage ? .memory : .file,
                               epoch: epoch, update: true, info: &updated)
            guard status == NATS_OK, let updated else {
                throw NATSError(.jetStreamFailed, doing: "updating the retention of the stream \(stream)", status: status)
            }
            jsStreamInfo_Destroy(current)
            current = updated
        }
        let lastSequence = current.pointee.State.LastSeq
        var opened = Opened(epoch: epoch, lastSequence: lastSequence, lastValue: nil, lastTime: 0)
        if lastSequence > 0, let last = try get(stream: stream, subject: nil, from: lastSequence) {
            opened.lastValue = last.value
            opened.lastTime = last.time
        }
        if retention.keepsLatestPerKey, lastSequence > 0 {
            let changes = try read(
                stream: stream, subject: subject, after: 0, through: lastSequence, limit: .max, maxBytes: .max, cutoff: nil)
            for change in changes {
                guard let key = TableChange.key(of: change.value) else { continue }
                opened.rows[key] = change.value["value"]?.isNull == false ? change : nil
            }
        }
        return opened
    }

    /// The stream limits of `retention`: max_msgs, max_age, max_msgs_per_subject (see
    /// ``open(stream:subject:retention:storage:)``; -1 and 0 are JetStream's "no limit").
    private static func limits(_ retention: HistoryRetention) -> (maxMsgs: Int64, maxAge: Int64, perSubject: Int64) {
        retention.keepsLatestPerKey ? (-1, 0, 1) : (Int64(retention.size), nanoseconds(retention.ttl), -1)
    }

    private func configure(
        stream: String, subject: String, retention: HistoryRetention, storage: JetStreamStore.Storage,
        epoch: String, update: Bool, info: inout UnsafeMutablePointer<jsStreamInfo>?
    ) -> natsStatus {
        var config = jsStreamConfig()
        jsStreamConfig_Init(&config)
        var errorCode = jsErrCode(0)
        return stream.withCString { name in
            subject.withCString { subjectName in
                (Self.epochPrefix + epoch).withCString { description in
                    var subjects: [UnsafePointer<CChar>?] = [subjectName]
                    return subjects.withUnsafeMutableBufferPointer { list in
                        config.Name = name
                        config.Description = description
                        config.Subjects = list.baseAddress
                        config.SubjectsLen = 1
                        config.Storage = storage == .memory ? js_MemoryStorage : js_FileStorage
                        let limits = Self.limits(retention)
                        config.MaxMsgs = limits.maxMsgs
                        config.MaxAge = limits.maxAge
                        config.MaxMsgsPerSubject = limits.perSubject
                        config.Discard = js_DiscardOld
                        config.AllowDirect = true
                        return update
                            ? js_UpdateStream(&info, context, &config, nil, &errorCode)
                            : js_AddStream(&info, context, &config, nil, &errorCode)
                    }
                }
            }
        }
    }

    /// The stream's last sequence.
    func lastSequence(stream: String) throws(NATSError) -> UInt64 {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var errorCode = jsErrCode(0)
        let status = js_GetStreamInfo(&info, context, stream, nil, &errorCode)
        guard status == NATS_OK, let info else {
            throw NATSError(.jetStreamFailed, doing: "reading the stream \(stream)", status: status)
        }
        defer { jsStreamInfo_Destroy(info) }
        return info.pointee.State.LastSeq
    }

    /// Deletes the stream (its history is gone); a stream already gone is no error.
    func delete(stream: String) throws(NATSError) {
        var errorCode = jsErrCode(0)
        let status = js_DeleteStream(context, stream, nil, &errorCode)
        guard status == NATS_OK || status == NATS_NOT_FOUND else {
            throw NATSError(.jetStreamFailed, doing: "deleting the stream \(stream)", status: status)
        }
    }

    /// Publishes `payload` to `subject` and waits for the stream's ack: its sequence.
    func publish(subject: String, payload: [UInt8], time: Int64) throws(NATSError) -> UInt64 {
        try publish([(subject, payload, time)])[0].get()
    }

    /// Publishes `values` (each to its subject, with its time) together and waits for
    /// every ack: each value's sequence, or why it was not stored, in the order given.
    /// The server stores them in that order (one connection), so that a group costs one
    /// round trip to the server instead of one per value.
    func publish(_ values: [(subject: String, payload: [UInt8], time: Int64)]) -> [Result<UInt64, NATSError>] {
        publish(values.map { ($0.subject, $0.payload, $0.time, nil) })
    }

    /// Publishes `values` as ``publish(_:)-([(subject:payload:time:)])`` does, each with its
    /// `id` (when given) as its `Nats-Msg-Id`: the server stores a value only once per id
    /// within the stream's duplicate window (two minutes by default), and acks a value
    /// published again with the sequence of the first.
    func publish(_ values: [(subject: String, payload: [UInt8], time: Int64, id: String?)]) -> [Result<UInt64, NATSError>] {
        group &+= 1
        let group = self.group
        acks.begin(group: group, count: values.count)
        var outcomes = [Result<UInt64, NATSError>?](repeating: nil, count: values.count)
        for (index, value) in values.enumerated() {
            do throws(NATSError) {
                var message: OpaquePointer? = try makeMessage(subject: value.subject, payload: value.payload, time: value.time)
                var status = natsMsgHeader_Set(message, Self.appendHeader, "\(group):\(index)")
                if status == NATS_OK, let id = value.id { status = natsMsgHeader_Set(message, "Nats-Msg-Id", id) }
                guard status == NATS_OK else {
                    natsMsg_Destroy(message)
                    throw NATSError(.jetStreamFailed, doing: "numbering a value", status: status)
                }
                let published = js_PublishMsgAsync(context, &message, nil)
                natsMsg_Destroy(message)  // nothing when the library took it
                guard published == NATS_OK else {
                    throw NATSError(.jetStreamFailed, doing: "storing a value on \(value.subject)", status: published)
                }
            } catch {
                outcomes[index] = .failure(error)
            }
        }
        var options = jsPubOptions()
        jsPubOptions_Init(&options)
        options.MaxWait = wait
        let completed = js_PublishAsyncComplete(context, &options)
        if completed != NATS_OK {
            // What is still unacked is given up (it may yet be stored: as a lone publish
            // that timed out).
            var pending = natsMsgList()
            if js_PublishAsyncGetPendingList(&pending, context) == NATS_OK { natsMsgList_Destroy(&pending) }
        }
        let received = acks.end()
        for index in values.indices where outcomes[index] == nil {
            outcomes[index] = received[index] ?? .failure(
                NATSError(.jetStreamFailed, doing: "storing a value on \(values[index].subject)", status: completed == NATS_OK ? NATS_ERR : completed))
        }
        return outcomes.map { $0! }
    }

    /// A stored message: the value's JSON with its time and writer headers.
    private func makeMessage(subject: String, payload: [UInt8], time: Int64) throws(NATSError) -> OpaquePointer {
        var message: OpaquePointer?
        var status = payload.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { natsMsg_Create(&message, subject, nil, $0.baseAddress, Int32($0.count)) }
        }
        guard status == NATS_OK, let message else { throw NATSError(.jetStreamFailed, doing: "publishing to \(subject)", status: status) }
        status = natsMsgHeader_Set(message, Self.timeHeader, String(time))
        if status == NATS_OK { status = natsMsgHeader_Set(message, Self.writerHeader, writer) }
        guard status == NATS_OK else {
            natsMsg_Destroy(message)
            throw NATSError(.jetStreamFailed, doing: "setting a value's headers", status: status)
        }
        return message
    }

    /// The kept values with `after` < sequence ≤ `through`, in order: at most `limit`,
    /// stopping after the one that brings the page to `maxBytes` of JSON, skipping
    /// those stamped before `cutoff`. One direct get per value (the next message on
    /// `subject` from a sequence: trimmed sequences cost nothing).
    func read(
        stream: String, subject: String, after: UInt64, through: UInt64, limit: Int, maxBytes: Int, cutoff: Int64?
    ) throws(NATSError) -> [HistoryEntry] {
        var page: [HistoryEntry] = []
        var bytes = 0
        var next = after &+ 1
        while next > after, next <= through, page.count < limit, bytes < maxBytes {
            guard let found = try get(stream: stream, subject: subject, from: next), found.sequence <= through else { break }
            next = found.sequence &+ 1
            if let cutoff, found.time < cutoff { continue }
            page.append(HistoryEntry(offset: found.sequence, value: found.value))
            bytes += found.size
        }
        return page
    }

    /// The message at `sequence` (or, with `subject`, the first on it from `sequence`),
    /// or `nil` when there is none.
    private func get(
        stream: String, subject: String?, from sequence: UInt64
    ) throws(NATSError) -> (sequence: UInt64, value: Value, time: Int64, size: Int)? {
        var options = jsDirectGetMsgOptions()
        jsDirectGetMsgOptions_Init(&options)
        options.Sequence = sequence
        var message: OpaquePointer?
        let status: natsStatus
        if let subject {
            status = subject.withCString { name in
                options.NextBySubject = name
                return js_DirectGetMsg(&message, context, stream, nil, &options)
            }
        } else {
            status = js_DirectGetMsg(&message, context, stream, nil, &options)
        }
        if status == NATS_NOT_FOUND { return nil }
        guard status == NATS_OK, let message else {
            throw NATSError(.jetStreamFailed, doing: "reading \(stream) from \(sequence)", status: status)
        }
        defer { natsMsg_Destroy(message) }
        var found = natsMsg_GetSequence(message)
        if found == 0, let text = Self.header(message, "Nats-Sequence"), let parsed = UInt64(text) { found = parsed }
        let time = Self.header(message, Self.timeHeader).flatMap { Int64($0) } ?? 0
        let length = Int(natsMsg_GetDataLength(message))
        let data = natsMsg_GetData(message)
        let bytes = UnsafeRawBufferPointer(start: data.map { UnsafeRawPointer($0) }, count: data == nil ? 0 : length)
        do throws(JSONError) {
            return (found, try Value.parse(bytes), time, length)
        } catch {
            throw NATSError(.jetStreamFailed, "the value at \(found) of \(stream) is not JSON: \(error)")
        }
    }

    private static func header(_ message: OpaquePointer, _ key: String) -> String? {
        var value: UnsafePointer<CChar>?
        guard natsMsgHeader_Get(message, key, &value) == NATS_OK, let value else { return nil }
        return String(cString: value)
    }

    private static func epoch(of info: UnsafeMutablePointer<jsStreamInfo>) -> String {
        if let description = info.pointee.Config?.pointee.Description {
            let text = String(cString: description)
            if text.hasPrefix(epochPrefix) { return String(text.dropFirst(epochPrefix.count)) }
        }
        // A stream made by another tool: its creation time stands for its identity.
        return "c" + String(UInt64(bitPattern: info.pointee.Created), radix: 16)
    }

    static func nanoseconds(_ duration: Duration?) -> Int64 {
        guard let duration else { return 0 }
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// The acks of one group of stored publishes, as libnats's thread receives them: each
/// found by the group and index its message carries (an ack of an earlier group that
/// gave up waiting is dropped).
private final class GroupAcks: @unchecked Sendable {
    private let lock = NSLock()
    private var group: UInt64 = 0
    private var outcomes: [Result<UInt64, NATSError>?] = []

    func begin(group: UInt64, count: Int) {
        lock.withLock {
            self.group = group
            outcomes = Array(repeating: nil, count: count)
        }
    }

    func end() -> [Result<UInt64, NATSError>?] {
        lock.withLock {
            group = 0
            defer { outcomes = [] }
            return outcomes
        }
    }

    /// libnats's callback: `message` was stored (`ack`) or not (`failure`); destroys it.
    func received(_ message: OpaquePointer?, _ ack: UnsafeMutablePointer<jsPubAck>?, _ failure: UnsafeMutablePointer<jsPubAckErr>?) {
        defer { natsMsg_Destroy(message) }
        guard let message else { return }
        var text: UnsafePointer<CChar>?
        guard natsMsgHeader_Get(message, JetStreamStreams.appendHeader, &text) == NATS_OK, let text else { return }
        let parts = String(cString: text).split(separator: ":")
        guard parts.count == 2, let group = UInt64(parts[0]), let index = Int(parts[1]) else { return }
        let outcome: Result<UInt64, NATSError>
        if let ack {
            outcome = .success(ack.pointee.Sequence)
        } else {
            let status = failure?.pointee.Err ?? NATS_ERR
            var detail = ""
            if let errorText = failure?.pointee.ErrText { detail = ": " + String(cString: errorText) }
            outcome = .failure(NATSError(
                .jetStreamFailed, "storing a value: \(String(cString: natsStatus_GetText(status)))\(detail)"))
        }
        lock.withLock {
            guard group == self.group, outcomes.indices.contains(index) else { return }
            outcomes[index] = outcome
        }
    }
}
