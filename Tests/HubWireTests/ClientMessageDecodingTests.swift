import HubWire
import HubValue
import Testing

@Suite("Wire client message decoding")
struct ClientMessageDecodingTests {
    // MARK: Every op

    @Test func hello() throws {
        #expect(try ClientMessage.decode(#"{"op":"hello"}"#) == .hello(token: nil, client: nil, batch: false))
        #expect(try ClientMessage.decode(#"{"op":"hello","token":"t0k","client":"cli","batch":true}"#)
            == .hello(token: "t0k", client: "cli", batch: true))
        #expect(try ClientMessage.decode(#"{"batch":false,"op":"hello","client":"é☃"}"#)
            == .hello(token: nil, client: "é☃", batch: false))
    }

    @Test func subscribeToAName() throws {
        #expect(try ClientMessage.decode(#"{"op":"subscribe","id":1,"to":"prices"}"#)
            == .subscribe(id: 1, .valid(SubscribeRequest(target: .name("prices")))))
        let full = #"{"op":"subscribe","id":7,"to":"a.b_c9","demand":2,"batch":true,"buffer":10,"overflow":"dropOldest"}"#
        #expect(try ClientMessage.decode(full) == .subscribe(id: 7, .valid(SubscribeRequest(
            target: .name("a.b_c9"), demand: .max(2), batch: true, buffer: 10, overflow: .dropOldest))))
    }

    @Test func subscribeToPipelineText() throws {
        let text = #"{"op":"subscribe","id":2,"pipeline":"orders | filter(.qty > 100)","demand":"unlimited","batch":false}"#
        #expect(try ClientMessage.decode(text) == .subscribe(id: 2, .valid(SubscribeRequest(
            target: .pipeline("orders | filter(.qty > 100)"), demand: .unlimited, batch: false))))
    }

    @Test(arguments: OverflowPolicy.subscriberChoices)
    func everyOverflowPolicyASubscriberMayAskFor(policy: OverflowPolicy) throws {
        let text = #"{"op":"subscribe","id":3,"to":"s","overflow":"\#(policy.rawValue)"}"#
        #expect(try ClientMessage.decode(text) == .subscribe(id: 3, .valid(SubscribeRequest(target: .name("s"), overflow: policy))))
    }

    /// `block` slows a subject's publishers down: the subject's setting, never a subscriber's.
    @Test func aSubscriberCannotAskForBlock() throws {
        let text = #"{"op":"subscribe","id":3,"to":"s","overflow":"block"}"#
        guard case .subscribe(3, .invalid(let error)) = try ClientMessage.decode(text) else {
            Issue.record("block was accepted from a subscriber")
            return
        }
        #expect(error.message.contains(#""error", "dropOldest", "dropNewest", "latest""#), "\(error.message)")
    }

    @Test func request() throws {
        #expect(try ClientMessage.decode(#"{"op":"request","id":1,"n":5}"#) == .request(id: 1, .valid(.max(5))))
        #expect(try ClientMessage.decode(#"{"op":"request","id":1,"n":"unlimited"}"#) == .request(id: 1, .valid(.unlimited)))
    }

    @Test func cancel() throws {
        #expect(try ClientMessage.decode(#"{"op":"cancel","id":9007199254740991}"#) == .cancel(id: 9_007_199_254_740_991))
    }

    @Test func send() throws {
        #expect(try ClientMessage.decode(#"{"op":"send","to":"prices","value":101.5,"ack":7}"#)
            == .send(to: "prices", value: 101.5, ack: 7))
        #expect(try ClientMessage.decode(#"{"op":"send","to":"p","value":{"a":[1,null]}}"#)
            == .send(to: "p", value: ["a": [1, nil]], ack: nil))
        // value null is present, not missing
        #expect(try ClientMessage.decode(#"{"op":"send","to":"p","value":null}"#) == .send(to: "p", value: nil, ack: nil))
    }

    @Test func complete() throws {
        #expect(try ClientMessage.decode(#"{"op":"complete","to":"s"}"#) == .complete(to: "s", ack: nil))
        #expect(try ClientMessage.decode(#"{"op":"complete","to":"s","ack":-3}"#) == .complete(to: "s", ack: -3))
    }

    @Test func fail() throws {
        #expect(try ClientMessage.decode(#"{"op":"fail","to":"s","error":{"why":"x"},"ack":1}"#)
            == .fail(to: "s", error: ["why": "x"], ack: 1))
        #expect(try ClientMessage.decode(#"{"op":"fail","to":"s","error":null}"#) == .fail(to: "s", error: nil, ack: nil))
    }

    @Test func trigger() throws {
        #expect(try ClientMessage.decode(#"{"op":"trigger","name":"t"}"#) == .trigger(name: "t", key: nil, ack: nil))
        #expect(try ClientMessage.decode(#"{"op":"trigger","name":"t","key":"page2","ack":2}"#)
            == .trigger(name: "t", key: "page2", ack: 2))
        // An explicit null key is present.
        #expect(try ClientMessage.decode(#"{"op":"trigger","name":"t","key":null}"#) == .trigger(name: "t", key: .some(.null), ack: nil))
    }

    @Test func list() throws {
        #expect(try ClientMessage.decode(#"{"op":"list","ack":5}"#) == .list(ack: 5))
        #expect(try ClientMessage.decode(#"{"op":"list","ack":5,"after":"p:page","limit":10000}"#)
            == .list(ack: 5, after: CatalogCursor(.pipeline, "page"), limit: 10_000))
        #expect(try ClientMessage.decode(#"{"op":"list","ack":5,"limit":1.0}"#) == .list(ack: 5, limit: 1))
        let message = ClientMessage.list(ack: 3, after: CatalogCursor(.trigger, "t.x"), limit: 7)
        #expect(try ClientMessage.decode(String(decoding: message.jsonBytes(), as: UTF8.self)) == message)
    }

    @Test(arguments: [
        #"{"op":"list","ack":5,"after":"s:"}"#, #"{"op":"list","ack":5,"after":"q:x"}"#,
        #"{"op":"list","ack":5,"after":"s:bad name"}"#, #"{"op":"list","ack":5,"after":"sx"}"#,
        #"{"op":"list","ack":5,"after":null}"#, #"{"op":"list","ack":5,"after":7}"#,
        #"{"op":"list","ack":5,"limit":0}"#, #"{"op":"list","ack":5,"limit":10001}"#,
        #"{"op":"list","ack":5,"limit":1.5}"#, #"{"op":"list","ack":5,"limit":"3"}"#,
    ])
    func aBadPageOfListIsBadMessageWithItsAck(text: String) throws {
        do {
            _ = try ClientMessage.decode(text)
            Issue.record("decoded \(text)")
        } catch {
            #expect(error.error.code == .badMessage)
            #expect(error.ack == 5)
        }
    }

    @Test func bytesBufferAndValueEntryPointsAgree() throws {
        let text = #"{"op":"send","to":"x","value":[1,"two"],"ack":3}"#
        let bytes = Array(text.utf8)
        let expected = ClientMessage.send(to: "x", value: [1, "two"], ack: 3)
        #expect(try ClientMessage.decode(bytes) == expected)
        let fromBuffer = try bytes.withUnsafeBytes { buffer throws(WireError) in try ClientMessage.decode(buffer) }
        #expect(fromBuffer == expected)
        #expect(try ClientMessage.decode(value: try Value.parse(text)) == expected)
    }

    @Test func unknownFieldsAreIgnored() throws {
        #expect(try ClientMessage.decode(#"{"op":"subscribe","id":1,"to":"s","demand":1,"colour":"blue"}"#)
            == .subscribe(id: 1, .valid(SubscribeRequest(target: .name("s"), demand: .max(1)))))
        #expect(try ClientMessage.decode(#"{"op":"send","to":"s","value":1,"ack":1,"extra":[1,2]}"#)
            == .send(to: "s", value: 1, ack: 1))
        // ack is not a field of cancel: ignored even when ill-typed.
        #expect(try ClientMessage.decode(#"{"op":"cancel","id":4,"ack":"x"}"#) == .cancel(id: 4))
    }

    // MARK: Connection-level bad_message

    @Test(arguments: ["not json", #"{"op":"send","to":"x","value":1"#, "", "{} x", #"{"op":"list","ack":1,}"#])
    func notJSONIsConnectionLevelWithOffset(text: String) throws {
        let error = try #require(wireDecodeError(text))
        #expect(error.error.code == .badMessage)
        #expect(error.ack == nil)
        var jsonError: JSONError?
        do throws(JSONError) {
            _ = try Value.parse(text)
        } catch {
            jsonError = error
        }
        let offset = try #require(jsonError).offset
        #expect(error.error.message.contains("byte \(offset)"))
    }

    @Test(arguments: ["[1,2,3]", "1", #""op""#, "null", "true"])
    func notAnObjectIsConnectionLevel(text: String) throws {
        let error = try #require(wireDecodeError(text))
        #expect(error == WireError(error.error, ack: nil))
        #expect(error.error.code == .badMessage)
    }

    @Test(arguments: [#"{"no":"op"}"#, #"{"op":1,"ack":1}"#, #"{"op":null}"#, #"{"op":["send"]}"#])
    func noStringOpIsConnectionLevel(text: String) throws {
        let error = try #require(wireDecodeError(text))
        #expect(error.error.code == .badMessage)
        #expect(error.ack == nil)
        #expect(error.error.message.contains("'op'"))
    }

    @Test(arguments: [
        #"{"op":"send","to":"s","value":1,"ack":"seven"}"#,
        #"{"op":"send","to":"s","value":1,"ack":1.5}"#,
        #"{"op":"send","to":"s","value":1,"ack":9007199254740992}"#,
        #"{"op":"send","to":"s","value":1,"ack":-9007199254740992}"#,
        #"{"op":"complete","to":"s","ack":null}"#,
        #"{"op":"fail","to":"s","error":1,"ack":true}"#,
        #"{"op":"trigger","name":"t","ack":[1]}"#,
        #"{"op":"list","ack":"1"}"#,
        #"{"op":"list","ack":1e300}"#,
        // an ill-typed ack wins over other problems: it cannot be echoed
        #"{"op":"send","to":5,"ack":"x"}"#,
    ])
    func ackOfWrongTypeIsConnectionLevel(text: String) throws {
        let error = try #require(wireDecodeError(text))
        #expect(error.error.code == .badMessage)
        #expect(error.ack == nil)
        #expect(error.error.message.contains("'ack'"))
    }

    @Test func listWithoutAckIsConnectionLevel() throws {
        let error = try #require(wireDecodeError(#"{"op":"list"}"#))
        #expect(error.error.code == .badMessage)
        #expect(error.ack == nil)
        #expect(error.error.message == "list: 'ack' is missing")
    }

    @Test(arguments: ["subscribe", "request", "cancel"], [
        "", #","id":0"#, #","id":-1"#, #","id":1.5"#, #","id":9007199254740992"#, #","id":"1""#, #","id":null"#,
        #","id":true"#, #","id":1e300"#,
    ])
    func missingOrInvalidIdIsConnectionLevel(op: String, idField: String) throws {
        let text = #"{"op":"\#(op)""# + idField + #","to":"s","n":1,"ack":3}"#
        let error = try #require(wireDecodeError(text))
        #expect(error.error.code == .badMessage)
        #expect(error.ack == nil)
        #expect(error.error.message.hasPrefix("\(op): 'id'"))
    }

    @Test func hellosIllTypedFieldsAreConnectionLevel() throws {
        for (field, text) in [
            ("token", #"{"op":"hello","token":1}"#),
            ("client", #"{"op":"hello","client":null}"#),
            ("batch", #"{"op":"hello","batch":"yes"}"#),
        ] {
            let error = try #require(wireDecodeError(text))
            #expect(error == WireError(error.error, ack: nil))
            #expect(error.error.code == .badMessage)
            #expect(error.error.message.contains("'\(field)'"))
        }
    }

    // MARK: Field errors carried on the ack

    @Test func missingOrIllTypedFieldsCarryTheAck() throws {
        let cases: [(String, String)] = [
            (#"{"op":"send","to":"s","ack":1}"#, "send: 'value' is missing"),
            (#"{"op":"send","value":1,"ack":1}"#, "send: 'to' is missing"),
            (#"{"op":"send","to":5,"value":1,"ack":1}"#, "send: 'to' must be a string"),
            (#"{"op":"complete","to":null,"ack":1}"#, "complete: 'to' must be a string"),
            (#"{"op":"fail","to":"s","ack":1}"#, "fail: 'error' is missing"),
            (#"{"op":"fail","to":["s"],"error":1,"ack":1}"#, "fail: 'to' must be a string"),
            (#"{"op":"trigger","ack":1}"#, "trigger: 'name' is missing"),
            (#"{"op":"trigger","name":{},"ack":1}"#, "trigger: 'name' must be a string"),
        ]
        for (text, message) in cases {
            let error = try #require(wireDecodeError(text), "\(text)")
            #expect(error.error == HubError(.badMessage, message), "\(text)")
            #expect(error.ack == 1, "\(text)")
        }
    }

    @Test func withoutAckFieldErrorsAreConnectionLevel() throws {
        let error = try #require(wireDecodeError(#"{"op":"send","to":"s"}"#))
        #expect(error == WireError(HubError(.badMessage, "send: 'value' is missing"), ack: nil))
    }

    @Test(arguments: ["bad name!", "", "1abc", ".a", "a-b", "a b", "é", "a/b", String(repeating: "a", count: 257)])
    func invalidNamesAreBadMessage(name: String) throws {
        let quoted = Value.string(name).jsonString()
        for op in ["send", "complete", "fail"] {
            let error = try #require(wireDecodeError(#"{"op":"\#(op)","to":\#(quoted),"value":1,"error":1,"ack":3}"#))
            #expect(error.error.code == .badMessage)
            #expect(error.ack == 3)
            #expect(error.error.message.hasPrefix("\(op): 'to' is not a valid name"))
        }
        let triggerError = try #require(wireDecodeError(#"{"op":"trigger","name":\#(quoted),"ack":-4}"#))
        #expect(triggerError.error.code == .badMessage)
        #expect(triggerError.ack == -4)
        guard case let .subscribe(id, .invalid(error)) = try ClientMessage.decode(#"{"op":"subscribe","id":8,"to":\#(quoted)}"#) else {
            Issue.record("expected an invalid subscribe")
            return
        }
        #expect(id == 8)
        #expect(error.code == .badMessage)
    }

    @Test func nameRules() {
        for valid in ["a", "_", "Z", "a.b", "a_1.2", "_.", "A9", String(repeating: "x", count: 256)] {
            #expect(HubName.isValid(valid), "\(valid)")
            #expect(HubName.problem(with: valid) == nil)
        }
        for invalid in ["", "9", ".", "a b", "a-b", "a\u{0}", "ä", "a\u{301}", String(repeating: "x", count: 257)] {
            #expect(!HubName.isValid(invalid), "\(invalid)")
            #expect(HubName.problem(with: invalid) != nil)
        }
    }

    // MARK: Unknown op

    @Test func unknownOpCarriesAValidAck() throws {
        let error = try #require(wireDecodeError(#"{"op":"teleport","ack":4}"#))
        #expect(error.error.code == .unknownOp)
        #expect(error.error.data == ["op": "teleport"])
        #expect(error.ack == 4)
    }

    @Test(arguments: [#"{"op":"teleport"}"#, #"{"op":"teleport","ack":"x"}"#, #"{"op":"welcome","ack":9007199254740992}"#])
    func unknownOpWithoutValidAckIsConnectionLevel(text: String) throws {
        let error = try #require(wireDecodeError(text))
        #expect(error.error.code == .unknownOp)
        #expect(error.ack == nil)
        #expect(error.error.data?["op"] != nil)
    }

    @Test func opsAreCaseSensitive() throws {
        let error = try #require(wireDecodeError(#"{"op":"Send","to":"s","value":1}"#))
        #expect(error.error.code == .unknownOp)
        #expect(error.error.data == ["op": "Send"])
    }

    // MARK: subscribe refusals on the id

    private func refusal(_ text: String) throws -> (UInt64, HubError)? {
        guard case let .subscribe(id, .invalid(error)) = try ClientMessage.decode(text) else { return nil }
        return (id, error)
    }

    @Test func bothOrNeitherTargetIsBadMessageOnTheId() throws {
        let both = try #require(try refusal(#"{"op":"subscribe","id":2,"to":"s","pipeline":"sequence([1])"}"#))
        #expect(both.0 == 2)
        #expect(both.1.code == .badMessage)
        let neither = try #require(try refusal(#"{"op":"subscribe","id":3}"#))
        #expect(neither.0 == 3)
        #expect(neither.1.code == .badMessage)
        let nullTo = try #require(try refusal(#"{"op":"subscribe","id":3,"to":null,"pipeline":"x"}"#))
        #expect(nullTo.1.code == .badMessage)
    }

    @Test(arguments: [
        (#""to":5"#, "'to'"), (#""pipeline":5"#, "'pipeline'"),
        (#""to":"s","buffer":0"#, "'buffer'"), (#""to":"s","buffer":-1"#, "'buffer'"),
        (#""to":"s","buffer":1.5"#, "'buffer'"), (#""to":"s","buffer":"10""#, "'buffer'"),
        (#""to":"s","overflow":"sometimes""#, "'overflow'"), (#""to":"s","overflow":"Latest""#, "'overflow'"),
        (#""to":"s","overflow":1"#, "'overflow'"), (#""to":"s","batch":1"#, "'batch'"),
        (#""to":"s","batch":null"#, "'batch'"),
    ])
    func illTypedSubscribeFieldsAreBadMessageOnTheId(fields: String, named: String) throws {
        let result = try #require(try refusal(#"{"op":"subscribe","id":4,"# + fields + "}"))
        #expect(result.0 == 4)
        #expect(result.1.code == .badMessage)
        #expect(result.1.message.contains(named))
    }

    @Test(arguments: ["-1", #""lots""#, "0.5", "null", "true", "[]", "{}", "-0.5", #""Unlimited""#, "1e-3"])
    func badInitialDemandIsInvalidDemandOnTheId(demand: String) throws {
        let result = try #require(try refusal(#"{"op":"subscribe","id":1,"to":"s","demand":\#(demand)}"#))
        #expect(result.0 == 1)
        #expect(result.1.code == .invalidDemand)
        #expect(result.1.message.contains("'demand'"))
    }

    @Test func initialDemandForms() throws {
        func demand(_ text: String) throws -> WireDemand? {
            guard case let .subscribe(_, .valid(request)) = try ClientMessage.decode(#"{"op":"subscribe","id":1,"to":"s","demand":\#(text)}"#) else { return nil }
            return request.demand
        }
        #expect(try demand("0") == WireDemand.none)
        #expect(try demand("0.0") == WireDemand.none)
        #expect(try demand("3") == .max(3))
        #expect(try demand("2.0") == .max(2))
        #expect(try demand("1e2") == .max(100))
        #expect(try demand(#""unlimited""#) == .unlimited)
        #expect(try demand("9007199254740990") == .max(9_007_199_254_740_990))
        #expect(try demand("9007199254740991") == .unlimited)
        #expect(try demand("9223372036854775807") == .unlimited)
        #expect(try demand("1e300") == .unlimited)
        #expect(try demand("18446744073709551616") == .unlimited)
    }

    @Test func largeBuffersAreTheSessionsBusiness() throws {
        guard case let .subscribe(_, .valid(request)) = try ClientMessage.decode(#"{"op":"subscribe","id":1,"to":"s","buffer":9223372036854775807}"#) else {
            Issue.record("expected a valid subscribe")
            return
        }
        #expect(request.buffer == Int.max)
        guard case .subscribe(_, .invalid) = try ClientMessage.decode(#"{"op":"subscribe","id":1,"to":"s","buffer":1e300}"#) else {
            Issue.record("expected an invalid subscribe")
            return
        }
    }

    @Test func pipelineTextIsNotNameChecked() throws {
        #expect(try ClientMessage.decode(#"{"op":"subscribe","id":1,"pipeline":""}"#)
            == .subscribe(id: 1, .valid(SubscribeRequest(target: .pipeline("")))))
    }

    // MARK: request n

    @Test(arguments: ["0", "-1", "1.5", "null", "true", "false", #""lots""#, #""""#, "[1]", #"{"n":1}"#, "0.0", "-0.0", "-1e300", "1e-300"])
    func invalidNEndsTheSubscription(n: String) throws {
        let message = try ClientMessage.decode(#"{"op":"request","id":3,"n":\#(n)}"#)
        guard case let .request(id, .invalid(error)) = message else {
            Issue.record("expected an invalid request, got \(message)")
            return
        }
        #expect(id == 3)
        #expect(error.code == .invalidDemand)
        #expect(error.message.contains("'n'"))
    }

    @Test func missingNEndsTheSubscription() throws {
        #expect(try ClientMessage.decode(#"{"op":"request","id":3}"#)
            == .request(id: 3, .invalid(HubError(.invalidDemand, "request: 'n' is missing"))))
    }

    @Test(arguments: [
        ("1", WireDemand.max(1)), ("2.0", .max(2)), ("1e2", .max(100)), ("2.5e1", .max(25)),
        (#""unlimited""#, .unlimited), ("9007199254740990", .max(9_007_199_254_740_990)),
        ("9007199254740991", .unlimited), ("9223372036854775807", .unlimited), ("1e20", .unlimited),
    ])
    func validN(n: String, expected: WireDemand) throws {
        #expect(try ClientMessage.decode(#"{"op":"request","id":1,"n":\#(n)}"#) == .request(id: 1, .valid(expected)))
    }

    // MARK: ids and acks at the bounds

    @Test func idsAndAcksAtTheBounds() throws {
        #expect(try ClientMessage.decode(#"{"op":"cancel","id":1}"#) == .cancel(id: 1))
        #expect(try ClientMessage.decode(#"{"op":"cancel","id":9007199254740991}"#) == .cancel(id: 9_007_199_254_740_991))
        #expect(try ClientMessage.decode(#"{"op":"cancel","id":2.0}"#) == .cancel(id: 2))
        #expect(try ClientMessage.decode(#"{"op":"list","ack":9007199254740991}"#) == .list(ack: 9_007_199_254_740_991))
        #expect(try ClientMessage.decode(#"{"op":"list","ack":-9007199254740991}"#) == .list(ack: -9_007_199_254_740_991))
        #expect(try ClientMessage.decode(#"{"op":"list","ack":0}"#) == .list(ack: 0))
        #expect(try ClientMessage.decode(#"{"op":"list","ack":-0.0}"#) == .list(ack: 0))
        #expect(wireDecodeError(#"{"op":"list","ack":9007199254740992}"#)?.error.code == .badMessage)
        #expect(wireDecodeError(#"{"op":"list","ack":-9007199254740992}"#)?.error.code == .badMessage)
        #expect(wireDecodeError(#"{"op":"cancel","id":9007199254740992}"#)?.error.code == .badMessage)
    }
}
