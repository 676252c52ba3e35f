import HubValue
import HubWire

/// One checkpoint of a running pipeline: what it stores in its store, as a JSON value.
///
/// ```json
/// {"version": 1, "text": "9f3c…", "sequence": 12, "consumed": 3400, "time": 1733…,
///  "sources": {"input": {"subject": "input", "epoch": "a1b2…", "offset": 3400}},
///  "operators": {"1:scan": {"op": "scan", "v": 1, "acc": {…}}}}
/// ```
///
/// - `text`: ``PipelineCheckpoint/hash(of:)`` of the pipeline's text, so that a pipeline
///   whose text changed does not reuse the state silently.
/// - `sources`: for each source with history, by its key (the subject's name; `name#2`
///   for its second use in the same text), the last offset consumed in its epoch.
/// - `operators`: every stateful operator's state by its path (``HubEngine/CheckpointRegistry``).
public struct PipelineCheckpoint: Sendable, Equatable {
    /// The format this broker writes and reads.
    public static let version = 1

    /// Where one source with history was.
    public struct SourcePosition: Sendable, Hashable {
        /// The subject.
        public var subject: String
        /// Its history's epoch.
        public var epoch: String
        /// The offset of the last value the pipeline consumed (0: none of this epoch).
        public var offset: UInt64

        /// The position `offset` in `epoch` of `subject`.
        public init(subject: String, epoch: String, offset: UInt64) {
            self.subject = subject
            self.epoch = epoch
            self.offset = offset
        }
    }

    /// The hash of the text it was taken from.
    public var textHash: String
    /// How many checkpoints the pipeline had committed before this one, plus one.
    public var sequence: UInt64
    /// How many values the pipeline consumed from its sources with history since it started afresh.
    public var consumed: UInt64
    /// When it was taken: nanoseconds since the Unix epoch.
    public var time: Int64
    /// The sources' positions, by key.
    public var sources: [String: SourcePosition]
    /// The operators' states, by path.
    public var operators: [String: Value]

    /// A checkpoint of these parts.
    public init(
        textHash: String, sequence: UInt64, consumed: UInt64, time: Int64, sources: [String: SourcePosition],
        operators: [String: Value]
    ) {
        self.textHash = textHash
        self.sequence = sequence
        self.consumed = consumed
        self.time = time
        self.sources = sources
        self.operators = operators
    }

    /// The checkpoint as stored.
    public var value: Value {
        var positions = Value.Object()
        for key in sources.keys.sorted() {
            let position = sources[key]!
            positions[key] = [
                "subject": .string(position.subject), "epoch": .string(position.epoch), "offset": .int(Int64(position.offset)),
            ]
        }
        var states = Value.Object()
        for path in operators.keys.sorted() { states[path] = operators[path] }
        return [
            "version": .int(Int64(Self.version)), "text": .string(textHash), "sequence": .int(Int64(sequence)),
            "consumed": .int(Int64(consumed)), "time": .int(time), "sources": .object(positions), "operators": .object(states),
        ]
    }

    /// Reads a stored checkpoint; `internal` with what is wrong when it is not one this broker reads.
    public init(value: Value) throws(HubError) {
        func problem(_ what: String) -> HubError { HubError(.internal, "the stored checkpoint \(what)") }
        guard case let .object(fields) = value else { throw problem("is not an object") }
        guard let version = fields["version"]?.intValue else { throw problem("has no version") }
        guard version == Int64(Self.version) else {
            throw problem("has version \(version); this broker reads version \(Self.version)")
        }
        guard let text = fields["text"]?.stringValue, let sequence = fields["sequence"]?.intValue, sequence >= 0,
              let consumed = fields["consumed"]?.intValue, consumed >= 0, let time = fields["time"]?.intValue,
              case let .object(positions)? = fields["sources"], case let .object(states)? = fields["operators"]
        else { throw problem("lacks one of text, sequence, consumed, time, sources, operators") }
        var sources: [String: SourcePosition] = [:]
        for (key, position) in positions {
            guard let subject = position["subject"]?.stringValue, let epoch = position["epoch"]?.stringValue,
                  let offset = position["offset"]?.intValue, offset >= 0
            else { throw problem("has a malformed source '\(key)'") }
            sources[key] = SourcePosition(subject: subject, epoch: epoch, offset: UInt64(offset))
        }
        self.init(
            textHash: text, sequence: UInt64(sequence), consumed: UInt64(consumed), time: time, sources: sources,
            operators: Dictionary(uniqueKeysWithValues: states.map { ($0.key, $0.value) }))
    }

    /// The hash a checkpoint keeps of a pipeline's text: 64-bit FNV-1a of its UTF-8 bytes, in
    /// hexadecimal (it tells texts apart; it is no protection against a forger).
    public static func hash(of text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
