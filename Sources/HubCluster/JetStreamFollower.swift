import CNATS
import Foundation
import HubRegistry
import HubValue
import HubWire
import Synchronization

/// Follows a subject's stream for the values other nodes store, while this node has
/// subscribers of the subject: a pull consumer (ordered by sequence, starting after
/// the last value known here) fetched on a thread of its own, one fetch per *permit*.
/// The log grants a permit (``permit(_:)``) once the previous batch has been taken on
/// the loop and its subscribers here want more values, for at most what they want and
/// never more than ``window``: a remote subscriber's demand becomes the pull requests,
/// at most one window of values is ever in flight or held in memory, never an
/// unbounded push.
final class JetStreamFollower: @unchecked Sendable {
    /// The most values one fetch asks for (and holds in memory).
    static let window = 64
    /// How long one fetch waits for a value before asking again (and checking ``stop()``).
    static let fetchWait: Int64 = 500

    private let subscription: OpaquePointer
    private let reaper: NATSSubscriptionReaper
    private let stopped = Atomic<Bool>(false)
    private let permits = DispatchSemaphore(value: 0)
    /// How many values the permit allows (1 ... ``window``).
    private let allowed = Atomic<Int>(JetStreamFollower.window)

    /// A durable pull consumer `consumer` of `stream` on `subject` from sequence `start`,
    /// which the server removes 30 seconds after this node stops asking (a node killed
    /// leaves nothing behind for long).
    init(
        context: OpaquePointer, reaper: NATSSubscriptionReaper, stream: String, subject: String, consumer: String, start: UInt64
    ) throws(NATSError) {
        var options = jsSubOptions()
        jsSubOptions_Init(&options)
        var subscription: OpaquePointer?
        var errorCode = jsErrCode(0)
        let status = stream.withCString { streamName in
            options.Stream = streamName
            options.ManualAck = true
            options.Config.DeliverPolicy = js_DeliverByStartSequence
            options.Config.OptStartSeq = max(1, start)
            options.Config.AckPolicy = js_AckAll
            options.Config.InactiveThreshold = 30_000_000_000
            options.Config.MaxRequestBatch = Int64(Self.window)
            return js_PullSubscribe(&subscription, context, subject, consumer, nil, &options, &errorCode)
        }
        guard status == NATS_OK, let subscription else {
            throw NATSError(.jetStreamFailed, doing: "following \(stream)", status: status)
        }
        self.subscription = subscription
        self.reaper = reaper
    }

    deinit {
        // A fetch's messages may still be on their way: destroyed once the library is past them.
        reaper.retire(subscription)
    }

    /// Fetches on a thread of its own until ``stop()``, one batch per ``permit(_:)``;
    /// `deliver` gets each batch (with the stores' writer ids).
    func run(_ deliver: @Sendable @escaping ([(entry: HistoryEntry, writer: String?)]) -> Void) {
        Thread.detachNewThread { [self] in
            waiting: while !stopped.load(ordering: .acquiring) {
                // Nothing is fetched without a permit.
                while permits.wait(timeout: .now() + .milliseconds(Int(Self.fetchWait))) == .timedOut {
                    if stopped.load(ordering: .acquiring) { break waiting }
                }
                // Fetches until the permit's batch came (a fetch that waited in vain asks again).
                while !stopped.load(ordering: .acquiring) {
                    let batch = fetch(max(1, min(Self.window, allowed.load(ordering: .acquiring))))
                    if let batch, !batch.isEmpty {
                        deliver(batch)
                        continue waiting
                    }
                }
            }
            natsSubscription_Unsubscribe(subscription)
        }
    }

    /// One fetch of at most `count` messages: its values (possibly none), or `nil` when
    /// the fetch waited in vain or failed.
    private func fetch(_ count: Int) -> [(entry: HistoryEntry, writer: String?)]? {
        var list = natsMsgList()
        var errorCode = jsErrCode(0)
        let status = natsSubscription_Fetch(&list, subscription, Int32(count), Self.fetchWait, &errorCode)
        guard status == NATS_OK else {
            if status != NATS_TIMEOUT { Thread.sleep(forTimeInterval: 0.1) }
            return nil
        }
        defer { natsMsgList_Destroy(&list) }
        var batch: [(entry: HistoryEntry, writer: String?)] = []
        for index in 0..<Int(list.Count) {
            guard let message = list.Msgs[index] else { continue }
            var metadata: UnsafeMutablePointer<jsMsgMetaData>?
            guard natsMsg_GetMetaData(&metadata, message) == NATS_OK, let metadata else { continue }
            let sequence = metadata.pointee.Sequence.Stream
            jsMsgMetaData_Destroy(metadata)
            let length = Int(natsMsg_GetDataLength(message))
            let data = natsMsg_GetData(message)
            let bytes = UnsafeRawBufferPointer(start: data.map { UnsafeRawPointer($0) }, count: data == nil ? 0 : length)
            guard let value = try? Value.parse(bytes) else { continue }
            var writer: UnsafePointer<CChar>?
            let writerID = natsMsgHeader_Get(message, JetStreamStreams.writerHeader, &writer) == NATS_OK
                ? writer.map { String(cString: $0) } : nil
            batch.append((HistoryEntry(offset: sequence, value: value), writerID))
        }
        if Int(list.Count) > 0, let last = list.Msgs[Int(list.Count) - 1] { natsMsg_Ack(last, nil) }
        return batch
    }

    /// Lets the thread fetch one batch of at most `count` values (capped at ``window``):
    /// the loop took the last batch and its subscribers want more. One permit at a time.
    func permit(_ count: Int) {
        allowed.store(max(1, min(Self.window, count)), ordering: .releasing)
        permits.signal()
    }

    /// Ends the fetching (the consumer is removed); returns at once.
    func stop() {
        stopped.store(true, ordering: .releasing)
        permits.signal()
    }
}
