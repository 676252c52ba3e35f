import HubPipeline
import HubRegistry
import HubValue
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The pipeline forms of shared, current-value and running pipelines, end to end: a real broker on a loopback port, a client
/// that speaks protocol v1 over a real WebSocket, and the pipeline text as a client sends it.
@Suite("Pipeline forms over the wire")
struct PipelineFormsWireTests {
    /// Seed 000's recursive paginated publisher: a named pipeline that calls itself for the
    /// next page, chosen by a condition in `switchToLatest`, each page on a trigger.
    static let page = """
        combineLatest(just(.), pages | first())
          | map({n: .[0], items: .[1][.[0]], next: .[1][.[0] + 1] != null ? .[0] + 1 : null})
          | switchToLatest(.next != null
              ? (page(.next) | wait(trigger(more)) | retry() | prepend(.))
              : just(.))
        """

    @Test func aNamedPipelineCalledWithAnArgumentPaginatesOnATrigger() async throws {
        try await withServer(setUp: { hub in
            try hub.declareSubject("pages", initialValue: [["a", "b"], ["c"], ["d"]])
            _ = try hub.declareTrigger("more")
            try hub.declarePipeline("page", source: Self.page, shared: false)
        }) { server in
            let client = try await server.connect()
            try await client.send(json([
                "op": "subscribe", "id": 1, "pipeline": "page(0) | map(.items)", "demand": "unlimited",
            ]))
            #expect(try await client.next() == ["op": "subscribed", "id": 1, "kind": "pipeline"])
            #expect(try await client.values(1, id: 1) == [["a", "b"]])
            try await client.send(json(["op": "trigger", "name": "more", "ack": 2]))
            #expect(try await client.next() == ["op": "ack", "ack": 2])
            #expect(try await client.values(1, id: 1) == [["c"]])
            try await client.send(json(["op": "trigger", "name": "more"]))
            #expect(try await client.values(1, id: 1) == [["d"]])
            #expect(try await client.next() == ["op": "complete", "id": 1], "no next page after the last")
        }
    }

    @Test func aConditionChoosesThePipelineBuiltForEachValue() async throws {
        try await withServer(setUp: { hub in
            try hub.declareSubject("cache", initialValue: ["x": "cached x"])
        }) { server in
            let client = try await server.connect()
            try await client.send(json([
                "op": "subscribe", "id": 1, "demand": "unlimited",
                "pipeline": #"sequence(["x", "y"]) | flatMap(. == "x" ? (cache | first() | map(.x)) : just("fetched " + .))"#,
            ]))
            #expect(try await client.next()["op"] == "subscribed")
            #expect(try await client.values(2, id: 1) == ["cached x", "fetched y"])
            #expect(try await client.next() == ["op": "complete", "id": 1])
            // A pipeline in parentheses where a value is expected is a compile error with its place.
            try await client.send(json(["op": "subscribe", "id": 2, "pipeline": "cache | map((cache | first()))"]))
            let refused = try await client.next()
            #expect(refused["op"] == "error" && refused["code"] == "pipeline_error", "\(refused)")
            #expect(refused["data"] == ["line": 1, "column": 13], "\(refused)")
        }
    }

    @Test func textFunctionsSortAndWithLatestFrom() async throws {
        try await withServer(setUp: { hub in
            try hub.declareSubject("clicks")
            try hub.declareSubject("settings", initialValue: ["currency": "EUR", "locale": "de_DE"])
        }) { server in
            let client = try await server.connect()
            try await client.send(json([
                "op": "subscribe", "id": 1, "demand": "unlimited",
                "pipeline": """
                    clicks | withLatestFrom(settings)
                      | map("\\(upper(replace(.[0].who, "^(\\\\w)\\\\w*\\\\s+(\\\\w+)$", "$1. $2"))): \\(formatCurrency(.[0].amount, .[1].currency, .[1].locale))")
                    """,
            ]))
            #expect(try await client.next()["op"] == "subscribed")
            try await client.send(json(["op": "send", "to": "clicks", "value": ["who": "Ada Lovelace", "amount": 1234.5]]))
            #expect(try await client.values(1, id: 1) == ["A. LOVELACE: 1.234,50\u{A0}€"])

            try await client.send(json([
                "op": "subscribe", "id": 2, "demand": "unlimited",
                "pipeline": #"sequence([{p: 3, n: "c"}, {p: 1, n: "a"}, {p: 2, n: "b"}, {p: 1, n: "a2"}]) | sort(by: $a.p < $b.p) | map(map(., x -> x.n))"#,
            ]))
            #expect(try await client.next()["op"] == "subscribed")
            #expect(try await client.values(1, id: 2) == [["a", "a2", "b", "c"]], "ascending and stable")
            #expect(try await client.next() == ["op": "complete", "id": 2])
        }
    }

    @Test func retryWithoutACountResubscribesAfterAFailingValue() async throws {
        try await withServer(setUp: { hub in try hub.declareSubject("divisor", initialValue: 5) }) { server in
            let client = try await server.connect()
            try await client.send(json([
                "op": "subscribe", "id": 1, "demand": "unlimited", "pipeline": "divisor | map(100 / .) | retry()",
            ]))
            #expect(try await client.next()["op"] == "subscribed")
            #expect(try await client.values(1, id: 1) == [20])
            // 0 fails the map; retry() resubscribes after its back-off and reads the current value,
            // failing again until the divisor is good: the subscriber sees no failure, then 25.
            try await client.send(json(["op": "send", "to": "divisor", "value": 0, "ack": 2]))
            #expect(try await client.next() == ["op": "ack", "ack": 2])
            try await client.send(json(["op": "send", "to": "divisor", "value": 4]))
            #expect(try await client.values(1, id: 1) == [25])
        }
    }

    /// A pipeline that calls itself with no signal in between nests synchronously, on the
    /// broker's loop thread: it ends at the call-depth bound with `limit_exceeded`, after the
    /// values of every level it reached, and never exhausts the stack.
    @Test func aPipelineCallingItselfWithoutASignalStopsAtTheBound() async throws {
        try await withServer(setUp: { hub in
            try hub.declarePipeline("loop", source: "loop(.)", shared: false)
            try hub.declarePipeline("count", source: "just(.) | flatMap(count(. + 1) | prepend(.))", shared: false)
        }) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "pipeline": "loop(0)", "demand": "unlimited"]))
            #expect(try await client.next()["op"] == "subscribed")
            let looped = try await client.next()
            #expect(looped["op"] == "error" && looped["id"] == 1 && looped["code"] == "limit_exceeded", "\(looped)")
            #expect(looped["message"]?.stringValue?.contains("the limit is 100 (limits.pipelines.maxCallDepth)") == true)

            try await client.send(json(["op": "subscribe", "id": 2, "pipeline": "count(0)", "demand": "unlimited"]))
            #expect(try await client.next()["op"] == "subscribed")
            if Self.underAddressSanitizer {
                // AddressSanitizer's frames are about three times larger: the stack check
                // stops the nesting first, at a level it names, after that level's values.
                var values: [Value] = []
                var message = try await client.next()
                while message["op"] == "next", message["id"] == 2 {
                    if let value = message["value"] { values.append(value) }
                    values += message["values"]?.arrayValue ?? []
                    message = try await client.next()
                }
                #expect(values.count >= 50 && values == (0..<values.count).map { Value.int(Int64($0)) }, "\(values)")
                #expect(message["op"] == "error" && message["id"] == 2 && message["code"] == "limit_exceeded", "\(message)")
                #expect(values.count == 100 || message["data"]?["limit"] == "stack", "\(message)")
            } else {
                #expect(try await client.values(100, id: 2) == (0..<100).map { Value.int(Int64($0)) })
                let counted = try await client.next()
                #expect(counted["op"] == "error" && counted["id"] == 2 && counted["code"] == "limit_exceeded", "\(counted)")
            }
        }
    }

    /// A bound higher than the loop thread's stack allows (each level of `count` nests its
    /// operators' frames) still ends with `limit_exceeded`: without the stack check this
    /// crashed the broker (signal 11) between 250 and 500 levels in a debug build.
    @Test func aCallDepthBoundBeyondTheStackEndsWithAnErrorNotACrash() async throws {
        let hub = Hub.Configuration(limits: PipelineLimits(maxCallDepth: 100_000))
        try await withServer(serviceConfiguration(hub: hub), setUp: { hub in
            try hub.declarePipeline("count", source: "just(.) | flatMap(count(. + 1) | prepend(.))", shared: false)
        }) { server in
            let client = try await server.connect()
            try await client.send(json(["op": "subscribe", "id": 1, "pipeline": "count(0)", "demand": "unlimited"]))
            #expect(try await client.next()["op"] == "subscribed")
            var count: Int64 = 0
            while true {
                let message = try await client.next()
                if message["op"] == "next" {
                    for value in message["values"]?.arrayValue ?? [message["value"] ?? .null] {
                        #expect(value == .int(count))
                        count += 1
                    }
                    continue
                }
                #expect(message["code"] == "limit_exceeded", "\(message)")
                #expect(message["message"]?.stringValue?.contains("too little stack is left") == true, "\(message)")
                break
            }
            #expect(count > 50, "\(count) levels")
            // The broker goes on serving.
            try await client.send(json(["op": "subscribe", "id": 2, "pipeline": "just(1)", "demand": "unlimited"]))
            #expect(try await client.next()["op"] == "subscribed")
            #expect(try await client.values(1, id: 2) == [1])
        }
    }

    /// Whether this test process runs under AddressSanitizer (its runtime's entry point
    /// is among the process's symbols).
    static let underAddressSanitizer: Bool = {
        guard let process = dlopen(nil, RTLD_NOW) else { return false }
        defer { dlclose(process) }
        return dlsym(process, "__asan_init") != nil
    }()
}
