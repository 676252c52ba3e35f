import Foundation
import HubRegistry
import HubValue
import HubWire

/// The checkpoints of the cluster's running pipelines, in the JetStream key-value bucket
/// `hub_checkpoints` (on disk, one value per key: the pipeline's name), used on the
/// ``JetStreamStore``'s worker only.
///
/// A key holds a record `{"checkpoint": …, "outputs": […]}`. JetStream has no transaction
/// across a bucket and streams, so a commit writes ahead: (1) the checkpoint with the
/// values the pipeline wrote into durable subjects since its last one, each with an id,
/// at the revision this node last saw (another node that committed since has taken the
/// pipeline over: the commit is refused, *fenced*); (2) the values, each published with
/// its id as its `Nats-Msg-Id`; (3) the checkpoint again without them. A node that reads
/// a record still holding values (the one before crashed between 1 and 3) publishes
/// them again before it resumes: the streams keep each id once (within their duplicate
/// window, two minutes), so none is lost and none is stored twice.
final class JetStreamCheckpoints: @unchecked Sendable {
    /// The bucket's name.
    static let bucket = "hub_checkpoints"
    /// The largest record: NATS's default largest message.
    static let maxRecordBytes = 1 << 20

    private let connection: NATSConnection
    private var store: NATSKeyValue?
    /// The revision of each pipeline's key this node last read or wrote (0: none).
    private var revisions: [String: UInt64] = [:]

    init(connection: NATSConnection) {
        self.connection = connection
    }

    private func bucket() throws(NATSError) -> NATSKeyValue {
        if let store { return store }
        let bound = try NATSKeyValue(connection: connection, bucket: Self.bucket, maxValueBytes: Self.maxRecordBytes, onDisk: true)
        store = bound
        return bound
    }

    /// The pipeline's checkpoint, after publishing again the values its record still holds.
    func load(_ pipeline: String, streams: JetStreamStreams) -> Result<Value?, HubError> {
        do throws(NATSError) {
            guard let (bytes, revision) = try bucket().entry(pipeline) else {
                revisions[pipeline] = 0
                return .success(nil)
            }
            revisions[pipeline] = revision
            guard let record = try? Value.parse(bytes) else {
                return .failure(HubError(.internal, "the checkpoint of '\(pipeline)' in \(Self.bucket) is not JSON"))
            }
            if case let .array(outputs)? = record["outputs"], !outputs.isEmpty {
                var values: [(subject: String, payload: [UInt8], time: Int64, id: String?)] = []
                for output in outputs {
                    guard let subject = output["subject"]?.stringValue, let value = output["value"],
                          let id = output["id"]?.stringValue, let time = output["time"]?.intValue else { continue }
                    var payload: [UInt8] = []
                    value.writeJSON(into: &payload)
                    values.append((subject, payload, time, id))
                }
                for outcome in streams.publish(values) {
                    if case let .failure(error) = outcome { return .failure(JetStreamStore.hubError(error)) }
                }
            }
            return .success(record["checkpoint"])
        } catch {
            return .failure(JetStreamStore.hubError(error))
        }
    }

    /// Writes the record of `pipeline` at the revision last seen; `nil` when another node
    /// wrote it since (fenced).
    private func write(_ pipeline: String, checkpoint: Value, outputs: Value) throws(NATSError) -> UInt64? {
        var bytes: [UInt8] = []
        Value.object(["checkpoint": checkpoint, "outputs": outputs]).writeJSON(into: &bytes)
        let store = try bucket()
        let last = revisions[pipeline] ?? 0
        let revision = last == 0 ? try store.create(pipeline, bytes) : try store.update(pipeline, bytes, last: last)
        if let revision { revisions[pipeline] = revision }
        return revision
    }

    /// Step 1 of a commit: the checkpoint with the values to publish (`ids` theirs).
    /// Returns `nil` when fenced.
    func writeAhead(
        _ pipeline: String, checkpoint: Value, values: [(subject: String, value: Value, time: Int64, id: String)]
    ) throws(NATSError) -> UInt64? {
        let outputs = Value.array(values.map {
            ["subject": .string($0.subject), "value": $0.value, "time": .int($0.time), "id": .string($0.id)]
        })
        return try write(pipeline, checkpoint: checkpoint, outputs: outputs)
    }

    /// Step 3: the checkpoint alone, once its values are stored. Returns `nil` when fenced.
    func settle(_ pipeline: String, checkpoint: Value) throws(NATSError) -> UInt64? {
        try write(pipeline, checkpoint: checkpoint, outputs: [])
    }

    /// The ids of a commit's values: the pipeline, the revision its record had before (which
    /// a commit made again after a crash has too), and the value's place.
    func ids(for pipeline: String, count: Int) -> [String] {
        let base = revisions[pipeline] ?? 0
        return (0..<count).map { "\(pipeline):\(base):\($0)" }
    }

    /// The error of a fenced commit.
    static func fenced(_ pipeline: String) -> HubError {
        HubError(
            .internal, "another node committed a checkpoint of '\(pipeline)' since this one read it: it runs the pipeline now",
            data: ["reason": "fenced"])
    }
}
