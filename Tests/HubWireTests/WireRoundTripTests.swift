import HubWire
import Testing
import HubTesting

@Suite("Wire round trips")
struct WireRoundTripTests {
    static let maxSafe: Int64 = 9_007_199_254_740_991

    // MARK: Client messages

    static func clientMessages(seed: UInt64) -> [ClientMessage] {
        var gen = ValueGenerator(seed: seed)
        let ids: [UInt64] = [1, 2, 42, UInt64(maxSafe) - 1, UInt64(maxSafe)]
        let acks: [Int64?] = [nil, 0, 1, -1, maxSafe, -maxSafe]
        let id = ids[Int(seed % UInt64(ids.count))]
        let ack = acks[Int(seed % UInt64(acks.count))]
        let demands: [WireDemand] = [.none, .max(1), .max(1000), .max(Int(maxSafe) - 1), .unlimited]
        let demand = demands[Int(seed % UInt64(demands.count))]
        let name = ["a", "prices", "a.b_c", "_x9", String(repeating: "n", count: 256)][Int(seed % 5)]
        let pipelineText = gen.string()
        return [
            .hello(token: nil, client: nil, batch: false),
            .hello(token: gen.string(), client: gen.string(), batch: seed % 2 == 0),
            .subscribe(id: id, .valid(SubscribeRequest(target: .name(name)))),
            .subscribe(id: id, .valid(SubscribeRequest(
                target: .pipeline(pipelineText), demand: demand, batch: seed % 3 == 0,
                buffer: Int(seed % 7) + 1, overflow: OverflowPolicy.allCases[Int(seed % 4)]))),
            .subscribe(id: id, .valid(SubscribeRequest(target: .name(name), demand: demand, batch: false))),
            .request(id: id, .valid(demand == .none ? .max(1) : demand)),
            .cancel(id: id),
            .send(to: name, value: gen.value(depth: 0), ack: ack),
            .send(to: name, value: gen.document(), ack: nil),
            .complete(to: name, ack: ack),
            .fail(to: name, error: gen.value(depth: 0), ack: ack),
            .trigger(name: name, key: nil, ack: ack),
            .trigger(name: name, key: gen.value(depth: 0), ack: ack),
            .trigger(name: name, key: .null, ack: nil),
            .list(ack: ack ?? 5),
        ]
    }

    @Test(arguments: 0..<12)
    func everyClientMessageRoundTrips(seed: Int) throws {
        for message in Self.clientMessages(seed: UInt64(seed)) {
            let bytes = message.jsonBytes()
            let decoded = try ClientMessage.decode(bytes)
            #expect(decoded == message, "\(String(decoding: bytes, as: UTF8.self))")
            // Values keep their exact form (ints stay ints, doubles bit for bit, key order).
            switch (message, decoded) {
            case let (.send(_, a, _), .send(_, b, _)), let (.fail(_, a, _), .fail(_, b, _)):
                #expect(identical(a, b))
            default:
                break
            }
            // Appending to a non-empty buffer writes the same bytes after it.
            var framed: [UInt8] = [0x81, 0x7E]
            message.encode(into: &framed)
            #expect(Array(framed.dropFirst(2)) == bytes)
        }
    }

    @Test func clientEncodingIsExactText() {
        #expect(String(decoding: ClientMessage.subscribe(id: 1, .valid(SubscribeRequest(target: .name("prices"), demand: .max(2)))).jsonBytes(), as: UTF8.self)
            == #"{"op":"subscribe","id":1,"to":"prices","demand":2}"#)
        #expect(String(decoding: ClientMessage.send(to: "prices", value: 101.5, ack: 7).jsonBytes(), as: UTF8.self)
            == #"{"op":"send","to":"prices","value":101.5,"ack":7}"#)
        #expect(String(decoding: ClientMessage.request(id: 1, .valid(.unlimited)).jsonBytes(), as: UTF8.self)
            == #"{"op":"request","id":1,"n":"unlimited"}"#)
        #expect(String(decoding: ClientMessage.cancel(id: 9_007_199_254_740_991).jsonBytes(), as: UTF8.self)
            == #"{"op":"cancel","id":9007199254740991}"#)
        #expect(String(decoding: ClientMessage.list(ack: -9_007_199_254_740_991).jsonBytes(), as: UTF8.self)
            == #"{"op":"list","ack":-9007199254740991}"#)
        #expect(String(decoding: ClientMessage.hello(token: "t", client: nil, batch: true).jsonBytes(), as: UTF8.self)
            == #"{"op":"hello","token":"t","batch":true}"#)
    }

    @Test func hugeFiniteDemandIsWrittenUnlimited() throws {
        let message = ClientMessage.request(id: 1, .valid(.max(Int(Self.maxSafe))))
        #expect(String(decoding: message.jsonBytes(), as: UTF8.self) == #"{"op":"request","id":1,"n":"unlimited"}"#)
        #expect(try ClientMessage.decode(message.jsonBytes()) == .request(id: 1, .valid(.unlimited)))
    }

    @Test func invalidChecksEncodeWhatTheyCan() {
        #expect(String(decoding: ClientMessage.subscribe(id: 3, .invalid(HubError(.badMessage, "x"))).jsonBytes(), as: UTF8.self)
            == #"{"op":"subscribe","id":3}"#)
        #expect(String(decoding: ClientMessage.request(id: 3, .invalid(HubError(.invalidDemand, "x"))).jsonBytes(), as: UTF8.self)
            == #"{"op":"request","id":3}"#)
    }

    // MARK: Server messages

    static func serverMessages(seed: UInt64) -> [ServerMessage] {
        var gen = ValueGenerator(seed: seed &+ 1000)
        let ids: [UInt64] = [1, 7, UInt64(maxSafe)]
        let acks: [Int64] = [0, -1, 12, maxSafe, -maxSafe]
        let id = ids[Int(seed % 3)]
        let ack = acks[Int(seed % 5)]
        let catalog = Catalog(
            subjects: [
                .init(name: "b", kind: .currentValue, value: gen.value(depth: 0), subscribers: 3),
                .init(name: "a", kind: .passthrough, subscribers: 0),
                .init(name: "A_z.1", kind: .currentValue, value: .null, subscribers: Int(Int64.max)),
            ],
            pipelines: [.init(name: "p2", subscribers: 1), .init(name: "p1", subscribers: 0)],
            triggers: ["tz", "t", "T"]
        ).sorted()
        return [
            .welcome(server: "reactive-hub/0.1", session: gen.string()),
            .subscribed(id: id, kind: SubscriptionKind.allCases[Int(seed % 3)]),
            .next(id: id, value: gen.value(depth: 0)),
            .next(id: id, value: gen.document()),
            .next(id: id, value: .array([])),
            .nextBatch(id: id, values: [gen.value(depth: 0)]),
            .nextBatch(id: id, values: [gen.value(depth: 0), gen.document(), .null]),
            .complete(id: id),
            .error(HubError(HubError.Code.allCases[Int(seed) % HubError.Code.allCases.count], gen.string()), id: nil, ack: nil),
            .error(HubError(.invalidDemand, "request: 'n' is missing"), id: id, ack: nil),
            .error(HubError(.completed, "done"), id: nil, ack: ack),
            .error(HubError(.failed, "the stream failed", data: gen.value(depth: 0)), id: id, ack: nil),
            .error(HubError(.pipelineError, "expected ')'", data: ["line": 1, "column": 12]), id: id, ack: ack),
            .ack(ack),
            .catalog(ack: ack, Catalog()),
            .catalog(ack: ack, catalog),
        ]
    }

    @Test(arguments: 0..<12)
    func everyServerMessageRoundTrips(seed: Int) throws {
        for message in Self.serverMessages(seed: UInt64(seed)) {
            let bytes = message.jsonBytes()
            let decoded = try ServerMessage.decode(bytes)
            #expect(decoded == message, "\(String(decoding: bytes, as: UTF8.self))")
            if case let (.next(_, a), .next(_, b)) = (message, decoded) { #expect(identical(a, b)) }
            // Re-encoding the decoded message gives the same bytes.
            #expect(decoded.jsonBytes() == bytes)
        }
    }

    @Test func serverEncodingIsExactText() {
        func text(_ m: ServerMessage) -> String { String(decoding: m.jsonBytes(), as: UTF8.self) }
        #expect(text(.welcome(server: "reactive-hub/0.1", session: "4f2c")) == #"{"op":"welcome","protocol":1,"server":"reactive-hub/0.1","session":"4f2c"}"#)
        #expect(text(.subscribed(id: 1, kind: .subject)) == #"{"op":"subscribed","id":1,"kind":"subject"}"#)
        #expect(text(.subscribed(id: 2, kind: .trigger)) == #"{"op":"subscribed","id":2,"kind":"trigger"}"#)
        #expect(text(.next(id: 1, value: 101.5)) == #"{"op":"next","id":1,"value":101.5}"#)
        #expect(text(.nextBatch(id: 3, values: [1, "a"])) == #"{"op":"next","id":3,"values":[1,"a"]}"#)
        #expect(text(.complete(id: 9_007_199_254_740_991)) == #"{"op":"complete","id":9007199254740991}"#)
        #expect(text(.ack(-9_007_199_254_740_991)) == #"{"op":"ack","ack":-9007199254740991}"#)
        #expect(text(.error(HubError(.unknownOp, "unknown op 'x'", data: ["op": "x"]), id: nil, ack: 4))
            == #"{"op":"error","ack":4,"code":"unknown_op","message":"unknown op 'x'","data":{"op":"x"}}"#)
        #expect(text(.error(HubError(.duplicateId, "id 5 is live", data: ["id": 5]), id: nil, ack: nil))
            == #"{"op":"error","code":"duplicate_id","message":"id 5 is live","data":{"id":5}}"#)
        #expect(text(.error(HubError(.overflow, "buffer full"), id: 8, ack: nil))
            == #"{"op":"error","id":8,"code":"overflow","message":"buffer full"}"#)
    }

    @Test func catalogIsWrittenSortedByName() {
        let catalog = Catalog(
            subjects: [.init(name: "s_b", kind: .passthrough, subscribers: 1), .init(name: "s_a", kind: .currentValue, value: ["x": 1], subscribers: 0)],
            pipelines: [.init(name: "z", subscribers: 2), .init(name: "Z", subscribers: 0)],
            triggers: ["t2", "t1"]
        )
        let text = String(decoding: ServerMessage.catalog(ack: 2, catalog).jsonBytes(), as: UTF8.self)
        #expect(text == #"{"op":"catalog","ack":2,"subjects":[{"name":"s_a","kind":"currentValue","value":{"x":1},"subscribers":0,"state":"open"},{"name":"s_b","kind":"passthrough","subscribers":1,"state":"open"}],"pipelines":[{"name":"Z","subscribers":0},{"name":"z","subscribers":2}],"triggers":[{"name":"t1","subscribers":0},{"name":"t2","subscribers":0}]}"#)
        #expect(String(decoding: ServerMessage.catalog(ack: 0, Catalog()).jsonBytes(), as: UTF8.self)
            == #"{"op":"catalog","ack":0,"subjects":[],"pipelines":[],"triggers":[]}"#)
    }

    // MARK: Hot path

    @Test(arguments: 0..<20)
    func theNextEnvelopeIsByteIdenticalToEncodingNext(seed: Int) {
        var gen = ValueGenerator(seed: UInt64(seed))
        let ids: [UInt64] = [1, 9, 10, 99, 100, 12345, UInt64(Self.maxSafe), UInt64.max]
        for id in ids {
            let value = seed % 2 == 0 ? gen.value(depth: 0) : gen.document()
            let encoded = value.jsonBytes()
            let envelope = NextEnvelope(id: id)
            var fromBuffer: [UInt8] = [1, 2, 3]
            encoded.withUnsafeBytes { envelope.append(encodedValue: $0, to: &fromBuffer) }
            // As the server queues it: head, the cached value, tail.
            let queued = [1, 2, 3] + envelope.head + encoded + NextEnvelope.tail
            var reference: [UInt8] = [1, 2, 3]
            ServerMessage.next(id: id, value: value).encode(into: &reference)
            #expect(fromBuffer == reference)
            #expect(queued == reference)

            let values = (0..<(seed % 4 + 1)).map { _ in gen.value(depth: 1) }
            var batch: [UInt8] = []
            envelope.appendBatch(encodedValues: values.map { $0.jsonBytes() }, to: &batch)
            #expect(batch == ServerMessage.nextBatch(id: id, values: values).jsonBytes())
            // From slices of one shared buffer, as a server holding encoded values back to back would.
            var shared: [UInt8] = []
            var ranges: [Range<Int>] = []
            for value in values {
                let start = shared.count
                value.writeJSON(into: &shared)
                ranges.append(start..<shared.count)
            }
            var fromSlices: [UInt8] = []
            envelope.appendBatch(encodedValues: ranges.map { shared[$0] }, to: &fromSlices)
            #expect(fromSlices == batch)
        }
    }

    @Test func integerFormattingAtTheBounds() {
        for id: UInt64 in [1, 9, 10, 11, 99, 100, 1_000_000, 9_007_199_254_740_991, UInt64(Int64.max), .max] {
            #expect(String(decoding: ServerMessage.complete(id: id).jsonBytes(), as: UTF8.self) == #"{"op":"complete","id":\#(id)}"#)
        }
        for ack: Int64 in [0, 1, -1, 9, -9, 10, -10, 9_007_199_254_740_991, -9_007_199_254_740_991, .max, .min] {
            #expect(String(decoding: ServerMessage.ack(ack).jsonBytes(), as: UTF8.self) == #"{"op":"ack","ack":\#(ack)}"#)
        }
    }
}
