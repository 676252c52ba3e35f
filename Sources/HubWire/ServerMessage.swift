import HubValue

/// A message from the server to a client (PROTOCOL.md §4).
///
/// The server encodes with ``encode(into:)``, which writes JSON bytes directly;
/// for the hot path it encodes a published value once and frames it for each
/// subscriber with that subscription's ``NextEnvelope``, which ``next(id:value:)``
/// and ``nextBatch(id:values:)`` are written with too. The Swift client decodes with
/// ``decode(_:)``, which is strict: anything that is not
/// a well-formed server message of protocol v1 is a ``WireError`` (`bad_message`).
public enum ServerMessage: Hashable, Sendable {
    /// The first message of a connection (`"protocol": 1`).
    case welcome(server: String, session: String)
    /// The subscription `id` exists. To a subject with history, it says where the subject
    /// stands (`epoch`, `offset`); for a `subscribe` with `since`, `recovered` says whether
    /// the values asked for were still in history (`false`: it goes on live from now).
    case subscribed(id: UInt64, kind: SubscriptionKind, history: HistoryPosition? = nil, recovered: Bool? = nil)
    /// One value for subscription `id`, with its offset for a subject with history.
    case next(id: UInt64, value: Value, offset: UInt64? = nil)
    /// Several values, in order, for subscription `id` (`values`, at least one); with
    /// history, `offset` is the first one's and the others follow one by one.
    case nextBatch(id: UInt64, values: [Value], offset: UInt64? = nil)
    /// Subscription `id` finished.
    case complete(id: UInt64)
    /// An error: of a subscription (`id`), of an acked request (`ack`), or
    /// connection-level (neither). Written with `code`, `message` and `data`
    /// when present.
    case error(HubError, id: UInt64?, ack: Int64?)
    /// The acked request succeeded.
    case ack(Int64)
    /// The answer to `list`.
    case catalog(ack: Int64, Catalog)
    /// The answer to `get`: the key's current value in the table and the offset of the
    /// change that set it, or `nil` (`"found": false`) when the table has no such key.
    /// (`value` and `offset` are both given or both `nil`).
    case entry(ack: Int64, key: Value, value: Value?, offset: UInt64?)
}

// MARK: - Encoding

extension ServerMessage {
    /// The message as compact JSON bytes.
    public func jsonBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        encode(into: &out)
        return out
    }

    /// Appends the message as compact JSON to `buffer` (e.g. after a frame header).
    public func encode(into buffer: inout [UInt8]) {
        switch self {
        case let .welcome(server, session):
            WireBytes.append(#"{"op":"welcome","protocol":"#, to: &buffer)
            WireBytes.append(Int64(HubProtocol.version), to: &buffer)
            WireBytes.append(#","server":"#, to: &buffer)
            WireBytes.appendString(server, to: &buffer)
            WireBytes.append(#","session":"#, to: &buffer)
            WireBytes.appendString(session, to: &buffer)
        case let .subscribed(id, kind, history, recovered):
            WireBytes.append(#"{"op":"subscribed","id":"#, to: &buffer)
            WireBytes.append(id, to: &buffer)
            switch kind {
            case .subject: WireBytes.append(#","kind":"subject""#, to: &buffer)
            case .pipeline: WireBytes.append(#","kind":"pipeline""#, to: &buffer)
            case .trigger: WireBytes.append(#","kind":"trigger""#, to: &buffer)
            }
            if let history {
                WireBytes.append(#","epoch":"#, to: &buffer)
                WireBytes.appendString(history.epoch, to: &buffer)
                WireBytes.append(#","offset":"#, to: &buffer)
                WireBytes.append(history.offset, to: &buffer)
            }
            if let recovered {
                WireBytes.append(recovered ? #","recovered":true"# : #","recovered":false"#, to: &buffer)
            }
        case let .next(id, value, offset):
            if let offset {
                NextEnvelope.appendHead(id: id, offset: offset, to: &buffer)
            } else {
                NextEnvelope.appendHead(id: id, to: &buffer)
            }
            value.writeJSON(into: &buffer)
            buffer.append(contentsOf: NextEnvelope.tail)
            return
        case let .nextBatch(id, values, offset):
            if let offset {
                NextEnvelope.appendBatchHead(id: id, offset: offset, to: &buffer)
            } else {
                NextEnvelope.appendBatchHead(id: id, to: &buffer)
            }
            for (index, value) in values.enumerated() {
                if index > 0 { buffer.append(NextEnvelope.batchSeparator) }
                value.writeJSON(into: &buffer)
            }
            buffer.append(contentsOf: NextEnvelope.batchTail)
            return
        case let .complete(id):
            WireBytes.append(#"{"op":"complete","id":"#, to: &buffer)
            WireBytes.append(id, to: &buffer)
        case let .error(error, id, ack):
            WireBytes.append(#"{"op":"error""#, to: &buffer)
            if let id {
                WireBytes.append(#","id":"#, to: &buffer)
                WireBytes.append(id, to: &buffer)
            }
            if let ack {
                WireBytes.append(#","ack":"#, to: &buffer)
                WireBytes.append(ack, to: &buffer)
            }
            WireBytes.append(#","code":"#, to: &buffer)
            WireBytes.appendString(error.code.rawValue, to: &buffer)
            WireBytes.append(#","message":"#, to: &buffer)
            WireBytes.appendString(error.message, to: &buffer)
            if let data = error.data {
                WireBytes.append(#","data":"#, to: &buffer)
                data.writeJSON(into: &buffer)
            }
        case let .ack(ack):
            WireBytes.append(#"{"op":"ack","ack":"#, to: &buffer)
            WireBytes.append(ack, to: &buffer)
        case let .catalog(ack, catalog):
            WireBytes.append(#"{"op":"catalog","ack":"#, to: &buffer)
            WireBytes.append(ack, to: &buffer)
            buffer.append(UInt8(ascii: ","))
            catalog.encodeMembers(into: &buffer)
        case let .entry(ack, key, value, offset):
            WireBytes.append(#"{"op":"entry","ack":"#, to: &buffer)
            WireBytes.append(ack, to: &buffer)
            WireBytes.append(#","key":"#, to: &buffer)
            key.writeJSON(into: &buffer)
            if let value {
                WireBytes.append(#","found":true,"value":"#, to: &buffer)
                value.writeJSON(into: &buffer)
                WireBytes.append(#","offset":"#, to: &buffer)
                WireBytes.append(offset ?? 0, to: &buffer)
            } else {
                WireBytes.append(#","found":false"#, to: &buffer)
            }
        }
        buffer.append(UInt8(ascii: "}"))
    }
}

// MARK: - Decoding

extension ServerMessage {
    /// Decodes one server message from the raw bytes of a text message, strictly.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> ServerMessage {
        try WireFields.decodeMessage(bytes, notJSON: "server message is not JSON", decode(value:))
    }

    /// Decodes one server message from bytes.
    public static func decode(_ bytes: [UInt8]) throws(WireError) -> ServerMessage {
        try WireFields.decodeMessage(bytes, notJSON: "server message is not JSON", decode(value:))
    }

    /// Decodes one server message from JSON text.
    public static func decode(_ text: String) throws(WireError) -> ServerMessage {
        try WireFields.decodeMessage(text, notJSON: "server message is not JSON", decode(value:))
    }

    /// Decodes one server message from a parsed JSON value, strictly: the
    /// required fields of its `op` must be present and well-typed (ids in
    /// 1...2^53−1, acks within ±(2^53−1), a known error code and kind,
    /// `protocol` 1, exactly one of `value`/`values` with `values` non-empty).
    /// Unknown fields are ignored.
    public static func decode(value: Value) throws(WireError) -> ServerMessage {
        guard case let .object(fields) = value else {
            throw WireError(WireFields.bad("a server message must be a JSON object, not \(value.typeDescription)"))
        }
        guard case let .string(op)? = fields["op"] else {
            throw WireError(WireFields.bad("server message: 'op' must be a string"))
        }
        switch op {
        case "next":
            let id = try requiredId(fields, op: op)
            let offset = try optionalOffset(fields, "offset", op: op)
            switch (fields["value"], fields["values"]) {
            case let (value?, nil):
                return .next(id: id, value: value, offset: offset)
            case let (nil, values?):
                guard case let .array(elements) = values, !elements.isEmpty else {
                    throw WireError(WireFields.bad("next: 'values' must be a non-empty array"))
                }
                return .nextBatch(id: id, values: elements, offset: offset)
            default:
                throw WireError(WireFields.bad("next: exactly one of 'value' or 'values' is required"))
            }
        case "ack":
            return .ack(try requiredAck(fields, op: op))
        case "error":
            guard case let .string(codeText)? = fields["code"], let code = HubError.Code(rawValue: codeText) else {
                throw WireError(WireFields.bad("error: 'code' must be a protocol error code"))
            }
            guard case let .string(message)? = fields["message"] else {
                throw WireError(WireFields.bad("error: 'message' must be a string"))
            }
            var id: UInt64?
            if fields["id"] != nil { id = try requiredId(fields, op: op) }
            var ack: Int64?
            if fields["ack"] != nil { ack = try requiredAck(fields, op: op) }
            return .error(HubError(code, message, data: fields["data"]), id: id, ack: ack)
        case "subscribed":
            let id = try requiredId(fields, op: op)
            guard case let .string(kindText)? = fields["kind"], let kind = SubscriptionKind(rawValue: kindText) else {
                throw WireError(WireFields.bad("subscribed: 'kind' must be \"subject\", \"pipeline\" or \"trigger\""))
            }
            var recovered: Bool?
            if let raw = fields["recovered"] {
                guard case let .bool(flag) = raw else {
                    throw WireError(WireFields.bad("subscribed: 'recovered' must be a boolean"))
                }
                recovered = flag
            }
            var history: HistoryPosition?
            if let epochField = fields["epoch"] {
                guard case let .string(epoch) = epochField else {
                    throw WireError(WireFields.bad("subscribed: 'epoch' must be a string"))
                }
                guard let offset = try optionalOffset(fields, "offset", op: op) else {
                    throw WireError(WireFields.bad("subscribed: 'offset' is required with 'epoch'"))
                }
                history = HistoryPosition(epoch: epoch, offset: offset)
            }
            return .subscribed(id: id, kind: kind, history: history, recovered: recovered)
        case "complete":
            return .complete(id: try requiredId(fields, op: op))
        case "welcome":
            guard let proto = fields["protocol"], WireFields.integer(proto) == Int64(HubProtocol.version) else {
                throw WireError(WireFields.bad("welcome: 'protocol' must be 1"))
            }
            guard case let .string(server)? = fields["server"] else {
                throw WireError(WireFields.bad("welcome: 'server' must be a string"))
            }
            guard case let .string(session)? = fields["session"] else {
                throw WireError(WireFields.bad("welcome: 'session' must be a string"))
            }
            return .welcome(server: server, session: session)
        case "catalog":
            let ack = try requiredAck(fields, op: op)
            return .catalog(ack: ack, try Catalog.decode(from: fields))
        case "entry":
            let ack = try requiredAck(fields, op: op)
            guard let key = fields["key"] else { throw WireError(WireFields.bad("entry: 'key' is missing")) }
            guard case let .bool(found)? = fields["found"] else {
                throw WireError(WireFields.bad("entry: 'found' must be a boolean"))
            }
            guard found else { return .entry(ack: ack, key: key, value: nil, offset: nil) }
            guard let value = fields["value"], let offset = try optionalOffset(fields, "offset", op: op) else {
                throw WireError(WireFields.bad("entry: 'value' and 'offset' are required when 'found' is true"))
            }
            return .entry(ack: ack, key: key, value: value, offset: offset)
        default:
            throw WireError(WireFields.bad("unknown server op '\(op)'"))
        }
    }

    private static func requiredId(_ fields: Value.Object, op: String) throws(WireError) -> UInt64 {
        guard let id = WireFields.id(fields["id"]) else {
            throw WireError(WireFields.bad("\(op): 'id' must be \(WireFields.idRange)"))
        }
        return id
    }

    /// An optional offset field: an integer in 0...2^53−1.
    private static func optionalOffset(_ fields: Value.Object, _ key: String, op: String) throws(WireError) -> UInt64? {
        guard let raw = fields[key] else { return nil }
        guard let offset = WireFields.integer(raw), offset >= 0, offset <= WireFields.maxSafeInteger else {
            throw WireError(WireFields.bad("\(op): '\(key)' must be an integer from 0 to 9007199254740991"))
        }
        return UInt64(offset)
    }

    private static func requiredAck(_ fields: Value.Object, op: String) throws(WireError) -> Int64 {
        guard let raw = fields["ack"], let ack = WireFields.ack(raw) else {
            throw WireError(WireFields.bad("\(op): 'ack' must be \(WireFields.ackRange)"))
        }
        return ack
    }
}
