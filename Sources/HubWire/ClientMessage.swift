import HubValue

/// A message from a client to the server (PROTOCOL.md §3), decoded and checked
/// by every rule of the protocol, or built by the Swift client and encoded.
///
/// Decoding (``decode(_:)`` and its overloads) throws a
/// ``WireError`` for what cannot be attached to a subscription id; what can is
/// returned inside the message (``SubscribeCheck``, ``DemandCheck``) so that the
/// session answers on that id. Unknown fields are ignored. `ack` is only read
/// by the ops that define it (`send`, `complete`, `fail`, `trigger`, `list`, `delete`,
/// `drain`, `get`, and an unknown op, which echoes a valid one).
public enum ClientMessage: Hashable, Sendable {
    /// `hello`: optional token and client name; `batch: true` allows batched `next`.
    case hello(token: String?, client: String?, batch: Bool)
    /// `subscribe` with a valid `id` (1...2^53−1); its other fields checked.
    case subscribe(id: UInt64, SubscribeCheck)
    /// `request` with a valid `id`; its `n` checked separately.
    case request(id: UInt64, DemandCheck)
    /// `cancel` with a valid `id`.
    case cancel(id: UInt64)
    /// `send` a value into the subject `to` (a valid name).
    case send(to: String, value: Value, ack: Int64?)
    /// `complete` the subject `to`.
    case complete(to: String, ack: Int64?)
    /// `fail` the subject `to` with the JSON value `error`.
    case fail(to: String, error: Value, ack: Int64?)
    /// `trigger` the trigger `name`, for `key` when present (`key: null` is `.some(.null)`).
    case trigger(name: String, key: Value?, ack: Int64?)
    /// `list`: ask for the catalog, from the entry after `after` (the `next` of an
    /// earlier page; the start when `nil`), at most `limit` entries (1...``Catalog/maxPageEntries``;
    /// the server's page size when `nil`).
    case list(ack: Int64, after: CatalogCursor? = nil, limit: Int? = nil)
    /// `delete` the subject `name` (its subscribers complete; the name is free again).
    case delete(name: String, ack: Int64?)
    /// `drain` (admin): the server stops accepting connections and closes the open ones
    /// with 1012 over `grace` (the server's default when `nil`), then stops.
    case drain(grace: Duration?, ack: Int64)
    /// `get`: the current value of `key` in the table subject `name` (answered by `entry`).
    case get(name: String, key: Value, ack: Int64)
}

// MARK: - Decoding

extension ClientMessage {
    /// Decodes one message from the raw bytes of a WebSocket text message.
    /// The bytes are only read during the call.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> ClientMessage {
        try WireFields.decodeMessage(bytes, notJSON: "not JSON", decode(value:))
    }

    /// Decodes one message from bytes.
    public static func decode(_ bytes: [UInt8]) throws(WireError) -> ClientMessage {
        try WireFields.decodeMessage(bytes, notJSON: "not JSON", decode(value:))
    }

    /// Decodes one message from JSON text.
    public static func decode(_ text: String) throws(WireError) -> ClientMessage {
        try WireFields.decodeMessage(text, notJSON: "not JSON", decode(value:))
    }

    /// Decodes one message from an already parsed JSON value.
    public static func decode(value: Value) throws(WireError) -> ClientMessage {
        guard case let .object(fields) = value else {
            throw WireError(WireFields.bad("a message must be a JSON object, not \(value.typeDescription)"))
        }
        guard case let .string(op)? = fields["op"] else {
            throw WireError(WireFields.bad(fields["op"] == nil ? "'op' is missing" : "'op' must be a string"))
        }
        switch op {
        case "send":
            let ack = try optionalAck(fields, op: op)
            let to = try name(fields, "to", op: op, ack: ack)
            guard let value = fields["value"] else {
                throw WireError(WireFields.bad("send: 'value' is missing"), ack: ack)
            }
            return .send(to: to, value: value, ack: ack)
        case "subscribe":
            let id = try requiredId(fields, op: op)
            return .subscribe(id: id, checkSubscribe(fields))
        case "request":
            let id = try requiredId(fields, op: op)
            return .request(id: id, checkRequest(fields))
        case "cancel":
            return .cancel(id: try requiredId(fields, op: op))
        case "complete":
            let ack = try optionalAck(fields, op: op)
            return .complete(to: try name(fields, "to", op: op, ack: ack), ack: ack)
        case "fail":
            let ack = try optionalAck(fields, op: op)
            let to = try name(fields, "to", op: op, ack: ack)
            guard let error = fields["error"] else {
                throw WireError(WireFields.bad("fail: 'error' is missing"), ack: ack)
            }
            return .fail(to: to, error: error, ack: ack)
        case "trigger":
            let ack = try optionalAck(fields, op: op)
            let name = try name(fields, "name", op: op, ack: ack)
            return .trigger(name: name, key: fields["key"], ack: ack)
        case "list":
            guard let raw = fields["ack"] else {
                throw WireError(WireFields.bad("list: 'ack' is missing"))
            }
            guard let ack = WireFields.ack(raw) else {
                throw WireError(WireFields.bad("list: 'ack' must be \(WireFields.ackRange)"))
            }
            var after: CatalogCursor?
            if let raw = fields["after"] {
                guard case let .string(text) = raw, let cursor = CatalogCursor(wire: text) else {
                    throw WireError(WireFields.bad("list: 'after' must be the 'next' of an earlier catalog (\"s:NAME\", \"p:NAME\" or \"t:NAME\")"), ack: ack)
                }
                after = cursor
            }
            var limit: Int?
            if let raw = fields["limit"] {
                guard let count = WireFields.integer(raw), count >= 1, count <= Int64(Catalog.maxPageEntries) else {
                    throw WireError(WireFields.bad("list: 'limit' must be an integer from 1 to \(Catalog.maxPageEntries)"), ack: ack)
                }
                limit = Int(count)
            }
            return .list(ack: ack, after: after, limit: limit)
        case "delete":
            let ack = try optionalAck(fields, op: op)
            return .delete(name: try name(fields, "name", op: op, ack: ack), ack: ack)
        case "drain":
            guard let raw = fields["ack"] else {
                throw WireError(WireFields.bad("drain: 'ack' is missing"))
            }
            guard let ack = WireFields.ack(raw) else {
                throw WireError(WireFields.bad("drain: 'ack' must be \(WireFields.ackRange)"))
            }
            var grace: Duration?
            if let raw = fields["grace"] {
                guard let seconds = raw.doubleValue, seconds >= 0, seconds <= 3600 else {
                    throw WireError(WireFields.bad("drain: 'grace' must be a number of seconds from 0 to 3600"), ack: ack)
                }
                grace = .milliseconds(Int64((seconds * 1000).rounded()))
            }
            return .drain(grace: grace, ack: ack)
        case "get":
            guard let raw = fields["ack"] else {
                throw WireError(WireFields.bad("get: 'ack' is missing"))
            }
            guard let ack = WireFields.ack(raw) else {
                throw WireError(WireFields.bad("get: 'ack' must be \(WireFields.ackRange)"))
            }
            let table = try name(fields, "name", op: op, ack: ack)
            guard let key = fields["key"] else {
                throw WireError(WireFields.bad("get: 'key' is missing"), ack: ack)
            }
            switch key {
            case .string, .int: break
            case let .double(number) where Int64(exactly: number) != nil: break
            default: throw WireError(WireFields.bad("get: 'key' must be a string or an integer"), ack: ack)
            }
            return .get(name: table, key: key, ack: ack)
        case "hello":
            let token = try optionalString(fields, "token", op: op)
            let client = try optionalString(fields, "client", op: op)
            var batch = false
            if let raw = fields["batch"] {
                guard case let .bool(flag) = raw else {
                    throw WireError(WireFields.bad("hello: 'batch' must be a boolean"))
                }
                batch = flag
            }
            return .hello(token: token, client: client, batch: batch)
        default:
            let ack = fields["ack"].flatMap(WireFields.ack)
            throw WireError(HubError(.unknownOp, "unknown op '\(op)'", data: ["op": .string(op)]), ack: ack)
        }
    }

    private static func optionalAck(_ fields: Value.Object, op: String) throws(WireError) -> Int64? {
        guard let raw = fields["ack"] else { return nil }
        guard let ack = WireFields.ack(raw) else {
            throw WireError(WireFields.bad("\(op): 'ack' must be \(WireFields.ackRange)"))
        }
        return ack
    }

    private static func requiredId(_ fields: Value.Object, op: String) throws(WireError) -> UInt64 {
        guard let raw = fields["id"] else {
            throw WireError(WireFields.bad("\(op): 'id' is missing"))
        }
        guard let id = WireFields.id(raw) else {
            throw WireError(WireFields.bad("\(op): 'id' must be \(WireFields.idRange)"))
        }
        return id
    }

    private static func name(_ fields: Value.Object, _ key: String, op: String, ack: Int64?) throws(WireError) -> String {
        switch nameProblem(fields[key], key, op: op) {
        case let .success(name): return name
        case let .failure(error): throw WireError(error, ack: ack)
        }
    }

    /// The name in `raw`, or the `bad_message` that names the field.
    private static func nameProblem(_ raw: Value?, _ key: String, op: String) -> Result<String, HubError> {
        guard let raw else { return .failure(WireFields.bad("\(op): '\(key)' is missing")) }
        guard case let .string(name) = raw else {
            return .failure(WireFields.bad("\(op): '\(key)' must be a string"))
        }
        if let problem = HubName.problem(with: name) {
            return .failure(WireFields.bad("\(op): '\(key)' is not a valid name: \(problem)"))
        }
        return .success(name)
    }

    private static func optionalString(_ fields: Value.Object, _ key: String, op: String) throws(WireError) -> String? {
        guard let raw = fields[key] else { return nil }
        guard case let .string(text) = raw else {
            throw WireError(WireFields.bad("\(op): '\(key)' must be a string"))
        }
        return text
    }

    private static func checkSubscribe(_ fields: Value.Object) -> SubscribeCheck {
        let target: SubscribeRequest.Target
        switch (fields["to"], fields["pipeline"]) {
        case (nil, nil):
            return .invalid(WireFields.bad("subscribe: one of 'to' or 'pipeline' is required"))
        case (.some, .some):
            return .invalid(WireFields.bad("subscribe: 'to' and 'pipeline' cannot both be given"))
        case let (to?, nil):
            switch nameProblem(to, "to", op: "subscribe") {
            case let .success(name): target = .name(name)
            case let .failure(error): return .invalid(error)
            }
        case let (nil, pipeline?):
            guard case let .string(text) = pipeline else {
                return .invalid(WireFields.bad("subscribe: 'pipeline' must be a string"))
            }
            target = .pipeline(text)
        }
        var request = SubscribeRequest(target: target)
        if let raw = fields["demand"] {
            guard let demand = WireFields.demand(raw, minimum: 0) else {
                return .invalid(HubError(.invalidDemand, "subscribe: 'demand' must be \(WireFields.demandRule)"))
            }
            request.demand = demand
        }
        if let raw = fields["batch"] {
            guard case let .bool(flag) = raw else {
                return .invalid(WireFields.bad("subscribe: 'batch' must be a boolean"))
            }
            request.batch = flag
        }
        if let raw = fields["buffer"] {
            guard let size = WireFields.integer(raw), size >= 1 else {
                return .invalid(WireFields.bad("subscribe: 'buffer' must be an integer ≥ 1"))
            }
            request.buffer = Int(size)
        }
        if let raw = fields["overflow"] {
            guard case let .string(text) = raw, let policy = OverflowPolicy(rawValue: text),
                  OverflowPolicy.subscriberChoices.contains(policy)
            else {
                return .invalid(WireFields.bad("subscribe: 'overflow' must be one of \"error\", \"dropOldest\", \"dropNewest\", \"latest\""))
            }
            request.overflow = policy
        }
        if let raw = fields["since"] {
            switch checkSince(raw) {
            case let .success(since): request.since = since
            case let .failure(error): return .invalid(error)
            }
        }
        return .valid(request)
    }

    /// `since`: `{"offset": N, "epoch"?: "E"}` or `{"last": K}`, N and K in 0...2^53−1.
    private static func checkSince(_ raw: Value) -> Result<HistorySince, HubError> {
        let rule = #"subscribe: 'since' must be {"offset": N, "epoch": "E"} or {"last": K} with integers 0 ≤ N, K ≤ 2^53−1"#
        guard case let .object(since) = raw else { return .failure(WireFields.bad(rule)) }
        func number(_ value: Value) -> UInt64? {
            guard let number = WireFields.integer(value), number >= 0, UInt64(number) <= HistorySince.maxNumber else { return nil }
            return UInt64(number)
        }
        switch (since["offset"], since["last"]) {
        case let (offset?, nil):
            guard let offset = number(offset) else { return .failure(WireFields.bad(rule)) }
            switch since["epoch"] {
            case nil:
                return .success(.offset(offset, epoch: nil))
            case let .string(epoch)?:
                return .success(.offset(offset, epoch: epoch))
            default:
                return .failure(WireFields.bad("subscribe: 'since.epoch' must be a string"))
            }
        case let (nil, last?):
            guard let last = number(last) else { return .failure(WireFields.bad(rule)) }
            return .success(.last(last))
        default:
            return .failure(WireFields.bad(rule))
        }
    }

    private static func checkRequest(_ fields: Value.Object) -> DemandCheck {
        guard let raw = fields["n"] else {
            return .invalid(HubError(.invalidDemand, "request: 'n' is missing"))
        }
        guard let demand = WireFields.demand(raw, minimum: 1) else {
            return .invalid(HubError(.invalidDemand, "request: 'n' must be \(WireFields.nRule), not \(WireFields.brief(raw))"))
        }
        return .valid(demand)
    }
}

// MARK: - Encoding

extension ClientMessage {
    /// The message as compact JSON bytes.
    public func jsonBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        encode(into: &out)
        return out
    }

    /// Appends the message as compact JSON to `buffer`.
    ///
    /// Optional fields are written only when present (`demand` only when not
    /// `.none`; a finite demand ≥ 2^53−1 is written `"unlimited"`, which is what
    /// the server makes of it). The decoder's own error cases encode what they
    /// can: a ``SubscribeCheck/invalid(_:)`` subscribe as `{"op":"subscribe","id":N}`
    /// and a ``DemandCheck/invalid(_:)`` request without `n`.
    public func encode(into buffer: inout [UInt8]) {
        switch self {
        case let .hello(token, client, batch):
            WireBytes.append(#"{"op":"hello""#, to: &buffer)
            if let token {
                WireBytes.append(#","token":"#, to: &buffer)
                WireBytes.appendString(token, to: &buffer)
            }
            if let client {
                WireBytes.append(#","client":"#, to: &buffer)
                WireBytes.appendString(client, to: &buffer)
            }
            if batch { WireBytes.append(#","batch":true"#, to: &buffer) }
        case let .subscribe(id, check):
            WireBytes.append(#"{"op":"subscribe","id":"#, to: &buffer)
            WireBytes.append(id, to: &buffer)
            if case let .valid(request) = check {
                switch request.target {
                case let .name(name):
                    WireBytes.append(#","to":"#, to: &buffer)
                    WireBytes.appendString(name, to: &buffer)
                case let .pipeline(text):
                    WireBytes.append(#","pipeline":"#, to: &buffer)
                    WireBytes.appendString(text, to: &buffer)
                }
                if request.demand != .none {
                    WireBytes.append(#","demand":"#, to: &buffer)
                    ClientMessage.appendDemand(request.demand, to: &buffer)
                }
                if let batch = request.batch {
                    WireBytes.append(batch ? #","batch":true"# : #","batch":false"#, to: &buffer)
                }
                if let size = request.buffer {
                    WireBytes.append(#","buffer":"#, to: &buffer)
                    WireBytes.append(size, to: &buffer)
                }
                if let policy = request.overflow {
                    WireBytes.append(#","overflow":"#, to: &buffer)
                    WireBytes.appendString(policy.rawValue, to: &buffer)
                }
                switch request.since {
                case nil:
                    break
                case let .offset(offset, epoch)?:
                    WireBytes.append(#","since":{"offset":"#, to: &buffer)
                    WireBytes.append(offset, to: &buffer)
                    if let epoch {
                        WireBytes.append(#","epoch":"#, to: &buffer)
                        WireBytes.appendString(epoch, to: &buffer)
                    }
                    buffer.append(UInt8(ascii: "}"))
                case let .last(count)?:
                    WireBytes.append(#","since":{"last":"#, to: &buffer)
                    WireBytes.append(count, to: &buffer)
                    buffer.append(UInt8(ascii: "}"))
                }
            }
        case let .request(id, check):
            WireBytes.append(#"{"op":"request","id":"#, to: &buffer)
            WireBytes.append(id, to: &buffer)
            if case let .valid(demand) = check {
                WireBytes.append(#","n":"#, to: &buffer)
                ClientMessage.appendDemand(demand, to: &buffer)
            }
        case let .cancel(id):
            WireBytes.append(#"{"op":"cancel","id":"#, to: &buffer)
            WireBytes.append(id, to: &buffer)
        case let .send(to, value, ack):
            WireBytes.append(#"{"op":"send","to":"#, to: &buffer)
            WireBytes.appendString(to, to: &buffer)
            WireBytes.append(#","value":"#, to: &buffer)
            value.writeJSON(into: &buffer)
            ClientMessage.appendAck(ack, to: &buffer)
        case let .complete(to, ack):
            WireBytes.append(#"{"op":"complete","to":"#, to: &buffer)
            WireBytes.appendString(to, to: &buffer)
            ClientMessage.appendAck(ack, to: &buffer)
        case let .fail(to, error, ack):
            WireBytes.append(#"{"op":"fail","to":"#, to: &buffer)
            WireBytes.appendString(to, to: &buffer)
            WireBytes.append(#","error":"#, to: &buffer)
            error.writeJSON(into: &buffer)
            ClientMessage.appendAck(ack, to: &buffer)
        case let .trigger(name, key, ack):
            WireBytes.append(#"{"op":"trigger","name":"#, to: &buffer)
            WireBytes.appendString(name, to: &buffer)
            if let key {
                WireBytes.append(#","key":"#, to: &buffer)
                key.writeJSON(into: &buffer)
            }
            ClientMessage.appendAck(ack, to: &buffer)
        case let .list(ack, after, limit):
            WireBytes.append(#"{"op":"list","ack":"#, to: &buffer)
            WireBytes.append(ack, to: &buffer)
            if let after {
                WireBytes.append(#","after":"#, to: &buffer)
                WireBytes.appendString(after.wire, to: &buffer)
            }
            if let limit {
                WireBytes.append(#","limit":"#, to: &buffer)
                WireBytes.append(limit, to: &buffer)
            }
        case let .delete(name, ack):
            WireBytes.append(#"{"op":"delete","name":"#, to: &buffer)
            WireBytes.appendString(name, to: &buffer)
            ClientMessage.appendAck(ack, to: &buffer)
        case let .get(name, key, ack):
            WireBytes.append(#"{"op":"get","name":"#, to: &buffer)
            WireBytes.appendString(name, to: &buffer)
            WireBytes.append(#","key":"#, to: &buffer)
            key.writeJSON(into: &buffer)
            ClientMessage.appendAck(ack, to: &buffer)
        case let .drain(grace, ack):
            WireBytes.append(#"{"op":"drain","ack":"#, to: &buffer)
            WireBytes.append(ack, to: &buffer)
            if let grace {
                WireBytes.append(#","grace":"#, to: &buffer)
                let milliseconds = grace.components.seconds * 1000 + grace.components.attoseconds / 1_000_000_000_000_000
                Value.double(Double(milliseconds) / 1000).writeJSON(into: &buffer)
            }
        }
        buffer.append(UInt8(ascii: "}"))
    }

    @inline(__always)
    private static func appendAck(_ ack: Int64?, to buffer: inout [UInt8]) {
        guard let ack else { return }
        WireBytes.append(#","ack":"#, to: &buffer)
        WireBytes.append(ack, to: &buffer)
    }

    private static func appendDemand(_ demand: WireDemand, to buffer: inout [UInt8]) {
        if let count = demand.count, count < Int(WireFields.maxSafeInteger) {
            WireBytes.append(count, to: &buffer)
        } else {
            WireBytes.append(#""unlimited""#, to: &buffer)
        }
    }
}
