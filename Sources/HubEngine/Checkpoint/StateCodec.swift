import HubValue

/// How a stateful operator writes its elements into a checkpoint and reads them back.
///
/// The engine's operators are generic over their values; a checkpoint is a ``Value``.
/// Whoever builds a checkpointed operator gives it the codec of its element type: the
/// identity for a pipeline of `Value`s (``value``), or one composed from the others here.
public struct StateCodec<Element> {
    /// Writes an element.
    public let encode: (Element) -> Value
    /// Reads an element back, or throws ``CheckpointError`` (``CheckpointError/Code/malformed``).
    public let decode: (Value) throws(CheckpointError) -> Element

    /// A codec of `encode` and `decode`.
    public init(encode: @escaping (Element) -> Value, decode: @escaping (Value) throws(CheckpointError) -> Element) {
        self.encode = encode
        self.decode = decode
    }

    /// Arrays of elements, as JSON arrays.
    public var array: StateCodec<[Element]> {
        let codec = self
        return StateCodec<[Element]>(
            encode: { .array($0.map(codec.encode)) },
            decode: { value throws(CheckpointError) in
                guard case let .array(items) = value else { throw StateCodec.malformed("an array", value) }
                var result: [Element] = []
                result.reserveCapacity(items.count)
                for item in items { result.append(try codec.decode(item)) }
                return result
            })
    }

    /// Optional elements: `nil` as `{}`, an element as `{"some": element}` (so that an
    /// element that is itself JSON `null` stays distinct from no element).
    public var optional: StateCodec<Element?> {
        let codec = self
        return StateCodec<Element?>(
            encode: { element in element.map { .object(["some": codec.encode($0)]) } ?? .object([:]) },
            decode: { value throws(CheckpointError) in
                guard case let .object(members) = value else { throw StateCodec.malformed("an optional", value) }
                guard let some = members["some"] else { return nil }
                return try codec.decode(some)
            })
    }

    /// The error of a value that is not `what`.
    static func malformed(_ what: String, _ value: Value) -> CheckpointError {
        CheckpointError(.malformed, "expected \(what) in the snapshot, found \(String(value.jsonString().prefix(80)))")
    }
}

extension StateCodec where Element == Value {
    /// Values as themselves.
    public static var value: StateCodec<Value> {
        StateCodec(encode: { $0 }, decode: { $0 })
    }
}

extension StateCodec where Element == Int {
    /// Integers as JSON integers.
    public static var int: StateCodec<Int> {
        StateCodec(
            encode: { .int(Int64($0)) },
            decode: { value throws(CheckpointError) in
                guard let n = value.intValue, let int = Int(exactly: n) else { throw malformed("an integer", value) }
                return int
            })
    }
}

extension StateCodec where Element == Bool {
    /// Booleans as JSON booleans.
    public static var bool: StateCodec<Bool> {
        StateCodec(
            encode: { .bool($0) },
            decode: { value throws(CheckpointError) in
                guard let b = value.boolValue else { throw malformed("a boolean", value) }
                return b
            })
    }
}

extension StateCodec where Element == Void {
    /// The one value of `Void`, as `null` (signals that carry nothing).
    public static var void: StateCodec<Void> {
        StateCodec(encode: { _ in .null }, decode: { _ in () })
    }
}
