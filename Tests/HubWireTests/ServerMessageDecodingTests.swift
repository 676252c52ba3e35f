import HubWire
import HubValue
import Testing

@Suite("Wire server message decoding")
struct ServerMessageDecodingTests {
    @Test func decodesEveryOpFromText() throws {
        #expect(try ServerMessage.decode(#"{"op":"welcome","protocol":1,"server":"reactive-hub/0.1","session":"4f2c"}"#)
            == .welcome(server: "reactive-hub/0.1", session: "4f2c"))
        #expect(try ServerMessage.decode(#"{"op":"subscribed","id":1,"kind":"pipeline"}"#) == .subscribed(id: 1, kind: .pipeline))
        #expect(try ServerMessage.decode(#"{"op":"next","id":1,"value":null}"#) == .next(id: 1, value: nil))
        #expect(try ServerMessage.decode(#"{"op":"next","id":1,"values":[1,2]}"#) == .nextBatch(id: 1, values: [1, 2]))
        #expect(try ServerMessage.decode(#"{"op":"complete","id":3}"#) == .complete(id: 3))
        #expect(try ServerMessage.decode(#"{"op":"ack","ack":-7}"#) == .ack(-7))
        #expect(try ServerMessage.decode(#"{"op":"error","code":"not_found","message":"no such subject 'x'"}"#)
            == .error(HubError(.notFound, "no such subject 'x'"), id: nil, ack: nil))
        #expect(try ServerMessage.decode(#"{"op":"error","id":2,"ack":3,"code":"failed","message":"m","data":{"a":1}}"#)
            == .error(HubError(.failed, "m", data: ["a": 1]), id: 2, ack: 3))
        #expect(try ServerMessage.decode(#"{"op":"catalog","ack":1,"subjects":[{"name":"s","kind":"currentValue","value":5,"subscribers":2}],"pipelines":[{"name":"p","subscribers":0}],"triggers":[{"name":"t"}]}"#)
            == .catalog(ack: 1, Catalog(
                subjects: [.init(name: "s", kind: .currentValue, value: 5, subscribers: 2)],
                pipelines: [.init(name: "p", subscribers: 0)],
                triggers: ["t"])))
    }

    @Test func unknownFieldsAreIgnored() throws {
        #expect(try ServerMessage.decode(#"{"op":"ack","ack":1,"extra":{"x":[]}}"#) == .ack(1))
        #expect(try ServerMessage.decode(#"{"op":"catalog","ack":1,"subjects":[],"pipelines":[],"triggers":[{"name":"t","since":1}],"more":1}"#)
            == .catalog(ack: 1, Catalog(triggers: ["t"])))
        let page = ServerMessage.catalog(ack: 2, Catalog(triggers: ["t"], connections: 3, next: CatalogCursor(.trigger, "t")))
        #expect(String(decoding: page.jsonBytes(), as: UTF8.self).hasSuffix(#","connections":3,"next":"t:t"}"#))
        #expect(try ServerMessage.decode(String(decoding: page.jsonBytes(), as: UTF8.self)) == page)
    }

    @Test(arguments: [
        "not json",
        "[]",
        #"{"id":1}"#,
        #"{"op":"teleport"}"#,
        #"{"op":"hello"}"#,
        #"{"op":"welcome","protocol":2,"server":"s","session":"x"}"#,
        #"{"op":"welcome","server":"s","session":"x"}"#,
        #"{"op":"welcome","protocol":1,"server":1,"session":"x"}"#,
        #"{"op":"welcome","protocol":1,"server":"s"}"#,
        #"{"op":"subscribed","id":1}"#,
        #"{"op":"subscribed","id":1,"kind":"subjects"}"#,
        #"{"op":"subscribed","id":0,"kind":"subject"}"#,
        #"{"op":"next","id":1}"#,
        #"{"op":"next","id":1,"value":1,"values":[1]}"#,
        #"{"op":"next","id":1,"values":[]}"#,
        #"{"op":"next","id":1,"values":1}"#,
        #"{"op":"next","value":1}"#,
        #"{"op":"next","id":9007199254740992,"value":1}"#,
        #"{"op":"next","id":"1","value":1}"#,
        #"{"op":"complete"}"#,
        #"{"op":"complete","id":-1}"#,
        #"{"op":"ack"}"#,
        #"{"op":"ack","ack":"1"}"#,
        #"{"op":"ack","ack":9007199254740992}"#,
        #"{"op":"error","message":"m"}"#,
        #"{"op":"error","code":"nope","message":"m"}"#,
        #"{"op":"error","code":"internal"}"#,
        #"{"op":"error","code":"internal","message":"m","id":0}"#,
        #"{"op":"error","code":"internal","message":"m","ack":null}"#,
        #"{"op":"catalog","subjects":[],"pipelines":[],"triggers":[]}"#,
        #"{"op":"catalog","ack":1,"pipelines":[],"triggers":[]}"#,
        #"{"op":"catalog","ack":1,"subjects":[1],"pipelines":[],"triggers":[]}"#,
        #"{"op":"catalog","ack":1,"subjects":[{"name":"s","kind":"other","subscribers":0}],"pipelines":[],"triggers":[]}"#,
        #"{"op":"catalog","ack":1,"subjects":[{"name":"s","kind":"passthrough"}],"pipelines":[],"triggers":[]}"#,
        #"{"op":"catalog","ack":1,"subjects":[{"name":"s","kind":"passthrough","subscribers":-1}],"pipelines":[],"triggers":[]}"#,
        #"{"op":"catalog","ack":1,"subjects":[],"pipelines":[{"name":"bad name","subscribers":0}],"triggers":[]}"#,
        #"{"op":"catalog","ack":1,"subjects":[],"pipelines":[],"triggers":["t"]}"#,
        #"{"op":"catalog","ack":1,"subjects":[],"pipelines":[],"triggers":[{}]}"#,
        #"{"op":"catalog","ack":1,"subjects":[],"pipelines":[],"triggers":[],"next":"x"}"#,
        #"{"op":"catalog","ack":1,"subjects":[],"pipelines":[],"triggers":[],"next":null}"#,
    ])
    func malformedServerMessagesAreTypedErrors(text: String) throws {
        let error = try #require(serverDecodeError(text))
        #expect(error.error.code == .badMessage)
        #expect(error.ack == nil)
    }

    @Test func entryPointsAgree() throws {
        let text = #"{"op":"next","id":4,"value":[1,2.5,"x"]}"#
        let bytes = Array(text.utf8)
        let expected = ServerMessage.next(id: 4, value: [1, 2.5, "x"])
        #expect(try ServerMessage.decode(bytes) == expected)
        #expect(try bytes.withUnsafeBytes { buffer throws(WireError) in try ServerMessage.decode(buffer) } == expected)
        #expect(try ServerMessage.decode(value: try Value.parse(text)) == expected)
    }

    @Test func wireErrorsBecomeErrorMessages() {
        let error = WireError(HubError(.unknownOp, "unknown op 'x'", data: ["op": "x"]), ack: 4)
        #expect(error.serverMessage == .error(error.error, id: nil, ack: 4))
    }
}
