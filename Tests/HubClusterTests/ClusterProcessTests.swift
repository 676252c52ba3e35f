import Foundation
import HubClient
import HubValue
import HubWire
import NetworkTestSupport
import RemoteTestSupport
import Testing

/// Three real `hubcli serve --cluster` processes and one real nats-server on loopback ports.
@Suite("Cluster of three hubcli processes", .serialized)
struct ClusterProcessTests {
    /// A nats-server and three nodes, a, b and c.
    struct Cluster {
        let nats: NATSServerProcess
        let nodes: [NodeProcess]
        /// The nodes' extra arguments (the configuration file).
        let arguments: [String]

        init(config: String? = nil, jetStream: Bool = false) async throws {
            nats = try await NATSServerProcess(jetStream: jetStream)
            var arguments: [String] = []
            if let config {
                let path = FileManager.default.temporaryDirectory.appendingPathComponent("cluster-\(UUID().uuidString).yml").path
                try config.write(toFile: path, atomically: true, encoding: .utf8)
                arguments = ["--config", path]
            }
            var nodes: [NodeProcess] = []
            for name in ["a", "b", "c"] {
                nodes.append(try await NodeProcess(name: name, natsURL: nats.url, extraArguments: arguments))
            }
            self.nodes = nodes
            self.arguments = arguments
            for node in nodes {
                try await waitUntil("node \(node.name) ready") { try await node.ready().status == 200 }
            }
        }
    }

    @Test func valuesFanOutToEveryNodeInThePublishersOrder() async throws {
        let cluster = try await Cluster()
        let (a, b, c) = (try await cluster.nodes[0].client(), try await cluster.nodes[1].client(), try await cluster.nodes[2].client())
        // Two subscribers on b (one value crosses to b once, b fans it out), one on c, one on a.
        let onB1 = record("prices", on: b)
        let onB2 = record("prices", on: b)
        let onC = record("prices", on: c)
        let onA = record("prices", on: a)
        // Once a's list counts the four, b's and c's interest is registered in NATS.
        try await waitUntil("a to see 4 subscribers of prices") { try await subscribers(of: "prices", via: a) == 4 }

        let count = 500
        for index in 0..<count { try await a.send(.int(Int64(index)), to: "prices") }
        let expected = (0..<count).map { Value.int(Int64($0)) }
        #expect(try await onB1.values(count) == expected)
        #expect(try await onB2.values(count) == expected)
        #expect(try await onC.values(count) == expected)
        #expect(try await onA.values(count) == expected)

        // A value sent on c reaches a and b as well (and c's own subscriber once).
        try await c.send("from c", to: "prices")
        for recorder in [onA, onB1, onB2, onC] { #expect(try await recorder.values(1) == ["from c"]) }

        // Complete on b: every node's subscribers end after the values sent before it.
        try await b.send("last", to: "prices")
        try await b.complete("prices")
        for (index, recorder) in [onA, onB1, onB2, onC].enumerated() {
            #expect(try await recorder.values(1) == ["last"])
            let event = try await recorder.events.next(timeout: .seconds(10), "complete")
            #expect(event == .finished, "subscriber \(index)")
        }
        // ... and a send on any node is refused as completed there too.
        try await waitUntil("c to refuse a send to the completed subject") {
            do {
                try await c.send(1, to: "prices")
                return false
            } catch {
                return (error as? HubClientError)?.code.rawValue == "completed"
            }
        }
        for client in [a, b, c] { await client.close() }
    }

    /// Any node serves the HTTP API for the whole hub: values POSTed on a reach an event
    /// stream on b, and c's catalog counts b's stream.
    @Test func theHTTPAPIOfAnyNodeServesTheWholeHub() async throws {
        let cluster = try await Cluster()
        let (a, b, c) = (cluster.nodes[0], cluster.nodes[1], cluster.nodes[2])
        let stream = try await Blocking.run { () -> HTTPTestClient in
            let client = try HTTPTestClient(port: b.port)
            let head = try client.openStream(path: "/v1/subjects/quotes/events")
            guard head.status == 200 else { throw HTTPTestClient.Failure(description: "stream: \(head.status) \(head.text)") }
            return client
        }
        func catalogCount(on node: NodeProcess) async throws -> Int? {
            let answer = try await HTTPTestClient.request(port: node.port, path: "/v1/catalog")
            guard case .object(let catalog)? = try? Value.parse(answer.body), case .array(let subjects)? = catalog["subjects"] else { return nil }
            for case .object(let subject) in subjects where subject["name"] == "quotes" {
                if case .int(let count)? = subject["subscribers"] { return Int(count) }
            }
            return 0
        }
        try await waitUntil("c's catalog to count b's stream") { try await catalogCount(on: c) == 1 }
        try await waitUntil("a's catalog to count b's stream") { try await catalogCount(on: a) == 1 }
        for n in 1...3 {
            let answer = try await Blocking.run {
                try HTTPTestClient(port: a.port).send(
                    method: "POST", path: "/v1/subjects/quotes", headers: ["Content-Type": "application/json"],
                    body: Array("{\"n\":\(n)}".utf8))
            }
            #expect(answer.status == 200, "\(answer.text)")
        }
        let events = try await Blocking.run { try (0..<3).map { _ in try stream.nextEvent() } }
        #expect(events.map { $0?.data } == [#"{"n":1}"#, #"{"n":2}"#, #"{"n":3}"#])
        stream.shutdownConnection()
    }

    @Test func concurrentPublishersOnDifferentNodesEachKeepTheirOrder() async throws {
        let cluster = try await Cluster()
        let (a, b, c) = (try await cluster.nodes[0].client(), try await cluster.nodes[1].client(), try await cluster.nodes[2].client())
        let onB = record("mixed", on: b)
        try await waitUntil("a and c to see b's subscriber") {
            let onA = try await subscribers(of: "mixed", via: a)
            let onC = try await subscribers(of: "mixed", via: c)
            return onA == 1 && onC == 1
        }
        let count = 300
        async let fromA: Void = { for index in 0..<count { try await a.send(["from": "a", "n": .int(Int64(index))], to: "mixed") } }()
        async let fromC: Void = { for index in 0..<count { try await c.send(["from": "c", "n": .int(Int64(index))], to: "mixed") } }()
        _ = try await (fromA, fromC)
        let values = try await onB.values(2 * count)
        for publisher in ["a", "c"] {
            let sequence = values.filter { $0["from"] == .string(publisher) }.map { $0["n"] }
            #expect(sequence == (0..<count).map { Value.int(Int64($0)) }, "publisher \(publisher)")
        }
        for client in [a, b, c] { await client.close() }
    }

    /// Not a benchmark (debug build, one value at a time): the latency a value takes from a
    /// `send` on a to a subscriber on b (through nats-server), beside a subscriber on a
    /// itself; printed for the README, checked only to be under a second.
    @Test(arguments: [false, true])
    func crossNodeLatencyFigures(sendImmediately: Bool) async throws {
        let cluster = try await Cluster(config: sendImmediately ? "cluster: {nats: \"nats://127.0.0.1:1\", sendImmediately: true}\n" : nil)
        let (a, b) = (try await cluster.nodes[0].client(), try await cluster.nodes[1].client())
        let onA = record("ping", on: a)
        let onB = record("ping", on: b)
        try await waitUntil("a to see b's subscriber") { try await subscribers(of: "ping", via: a) == 2 }
        let clock = ContinuousClock()
        var local: [Duration] = []
        var remote: [Duration] = []
        for index in 0..<300 {
            let start = clock.now
            try await a.send(.int(Int64(index)), to: "ping")
            _ = try await onA.values(1)
            local.append(clock.now - start)
            _ = try await onB.values(1)
            remote.append(clock.now - start)
        }
        func percentile(_ samples: [Duration], _ p: Double) -> Duration {
            let sorted = samples.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        func ms(_ duration: Duration) -> String {
            let (seconds, attoseconds) = duration.components
            return String(format: "%.2f ms", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
        }
        let figures = "send on a → subscriber on a: p50 \(ms(percentile(local, 0.5))), p99 \(ms(percentile(local, 0.99))); "
            + "→ subscriber on b: p50 \(ms(percentile(remote, 0.5))), p99 \(ms(percentile(remote, 0.99)))"
        print("cluster latency (300 values, one at a time, sendImmediately: \(sendImmediately)): \(figures)")
        #expect(percentile(remote, 0.99) < .seconds(1), "\(figures)")
        for client in [a, b] { await client.close() }
    }

    @Test func aNodeWithoutSubscribersGetsNothingAndListSumsTheCluster() async throws {
        let cluster = try await Cluster()
        let (a, b, c) = (try await cluster.nodes[0].client(), try await cluster.nodes[1].client(), try await cluster.nodes[2].client())
        let onB = record("orders", on: b)
        let onB2 = record("orders", on: b)
        try await waitUntil("c to see b's subscribers") { try await subscribers(of: "orders", via: c) == 2 }
        // Interest: in NATS only b listens to hub.v.orders (once, for its two subscribers).
        let subscriptions = try await cluster.nats.subscriptions()
        #expect(subscriptions["b"]?.contains("hub.v.orders") == true)
        #expect(subscriptions["a"]?.contains("hub.v.orders") == false)
        #expect(subscriptions["c"]?.contains("hub.v.orders") == false)
        for index in 0..<10 { try await a.send(.int(Int64(index)), to: "orders") }
        #expect(try await onB.values(10).count == 10)
        #expect(try await onB2.values(10).count == 10)
        // The subscribers leave: the count goes back to zero everywhere, and b stops listening.
        onB.cancel()
        onB2.cancel()
        try await waitUntil("a to see no subscriber") { try await subscribers(of: "orders", via: a) == 0 }
        try await waitUntil("b to stop listening to hub.v.orders") {
            try await cluster.nats.subscriptions()["b"]?.contains("hub.v.orders") == false
        }

        // fail on a reaches c's subscriber with its error value; delete on c starts it over everywhere.
        let onC = record("feed", on: c)
        try await waitUntil("a to see c's subscriber of feed") { try await subscribers(of: "feed", via: a) == 1 }
        try await a.fail("feed", error: ["reason": "down"])
        let failure = try await onC.events.next(timeout: .seconds(10), "the failure")
        guard case .failed(let error) = failure else { throw TimedOut(what: "a failure, got \(failure)") }
        #expect(error.code.rawValue == "failed")
        #expect(error.data == ["reason": "down"])
        try await c.delete("feed")
        try await waitUntil("a to see feed open again") {
            try await a.list().subjects.first { $0.name == "feed" }.map { $0.state == .open } ?? true
        }
        try await a.send(1, to: "feed")
        for client in [a, b, c] { await client.close() }
    }

    @Test func currentValueSubjectsAgreeAcrossNodes() async throws {
        // Every node declares the subject (same file); none has a subscriber yet.
        let cluster = try await Cluster(config: "subjects:\n  level:\n    kind: currentValue\n    initial: 0\n")
        let (a, b, c) = (try await cluster.nodes[0].client(), try await cluster.nodes[1].client(), try await cluster.nodes[2].client())
        func level(via client: HubClient) async throws -> Value? {
            try await client.list().subjects.first { $0.name == "level" }?.value
        }
        try await waitUntil("a to hear b and c") {
            // Each node listens to its current-value subjects from the start; a catalog from
            // both others means their subscriptions (sent before) are in place.
            let subscriptions = try await cluster.nats.subscriptions()
            return subscriptions["b"]?.contains("hub.v.level") == true && subscriptions["c"]?.contains("hub.v.level") == true
        }
        for value in 1...5 { try await a.send(.int(Int64(value)), to: "level") }
        try await waitUntil("b and c to hold a's last value") {
            let onB = try await level(via: b)
            let onC = try await level(via: c)
            return onB == 5 && onC == 5
        }
        // A subscriber that joins on c gets the current value first.
        let onC = record("level", on: c)
        #expect(try await onC.values(1) == [5])
        try await b.send(6, to: "level")
        #expect(try await onC.values(1) == [6])
        try await waitUntil("a to hold b's value") { try await level(via: a) == 6 }
        for client in [a, b, c] { await client.close() }
    }

    @Test func aNodeThatJoinsLaterGetsTheCurrentValueFromJetStream() async throws {
        let config = "subjects:\n  level:\n    kind: currentValue\n    initial: 0\n"
        let cluster = try await Cluster(config: config, jetStream: true)
        let a = try await cluster.nodes[0].client()
        let b = try await cluster.nodes[1].client()
        func level(via client: HubClient) async throws -> Value? {
            try await client.list().subjects.first { $0.name == "level" }?.value
        }
        try await waitUntil("b to listen to level") {
            try await cluster.nats.subscriptions()["b"]?.contains("hub.v.level") == true
        }
        for value in 1...5 { try await a.send(.int(Int64(value)), to: "level") }
        try await waitUntil("b to hold a's last value") { try await level(via: b) == 5 }

        // A fourth node, started now, reads the bucket when it connects.
        let d = try await NodeProcess(name: "d", natsURL: cluster.nats.url, extraArguments: cluster.arguments)
        let onD = try await d.client()
        try await waitUntil("d to hold the cluster's current value") { try await level(via: onD) == 5 }
        let subscriber = record("level", on: onD)
        #expect(try await subscriber.values(1) == [5])

        // Delete resets it everywhere, the bucket included: a node joining then sees the initial value.
        try await b.delete("level")
        try await waitUntil("a to see level back at 0") { try await level(via: a) == 0 }
        let e = try await NodeProcess(name: "e", natsURL: cluster.nats.url, extraArguments: cluster.arguments)
        let onE = try await e.client()
        try await waitUntil("e ready") { try await e.ready().status == 200 }
        try await a.send(7, to: "level")
        try await waitUntil("e to hold 7") { try await level(via: onE) == 7 }
        for client in [a, b, onD, onE] { await client.close() }
    }

    @Test func aNodeThatDiesIsForgottenAndTheOthersGoOn() async throws {
        let cluster = try await Cluster()
        let (a, b, c) = (try await cluster.nodes[0].client(), try await cluster.nodes[1].client(), try await cluster.nodes[2].client())
        let onB = record("jobs", on: b)
        _ = record("jobs", on: c)
        try await waitUntil("a to see both subscribers") { try await subscribers(of: "jobs", via: a) == 2 }
        // c dies without a word (SIGKILL): within three catalog periods a stops counting it.
        kill(cluster.nodes[2].process.processIdentifier, SIGKILL)
        try await waitUntil("a to forget c", timeout: .seconds(10)) { try await subscribers(of: "jobs", via: a) == 1 }
        try await a.send("still", to: "jobs")
        #expect(try await onB.values(1) == ["still"])
        for client in [a, b] { await client.close() }
        await c.close()
    }

    @Test func aCurrentValueSubjectAddedByAReloadIsListenedToAtOnce() async throws {
        let cluster = try await Cluster(config: "triggers: [refresh]\n")
        let path = try #require(cluster.arguments.last)
        try "triggers: [refresh]\nsubjects:\n  level:\n    initial: 0\n".write(toFile: path, atomically: true, encoding: .utf8)
        for node in cluster.nodes { kill(node.process.processIdentifier, SIGHUP) }
        try await waitUntil("every node to listen to level after the reload") {
            let subscriptions = try await cluster.nats.subscriptions()
            return cluster.nodes.allSatisfy { subscriptions[$0.name]?.contains("hub.v.level") == true }
        }
        let (a, c) = (try await cluster.nodes[0].client(), try await cluster.nodes[2].client())
        try await a.send(3, to: "level")
        try await waitUntil("c to hold 3") { try await c.list().subjects.first { $0.name == "level" }?.value == 3 }
        for client in [a, c] { await client.close() }
    }

    @Test func triggersFireAcrossNodes() async throws {
        let cluster = try await Cluster()
        let (a, b, c) = (try await cluster.nodes[0].client(), try await cluster.nodes[1].client(), try await cluster.nodes[2].client())
        let all = Recorder()
        b.subscribe(pipeline: "trigger(refresh)").subscribe(all)
        let keyed = Recorder()
        c.subscribe(pipeline: "trigger(refresh, 7)").subscribe(keyed)
        try await waitUntil("a to see the trigger's two subscribers") { try await subscribers(of: "refresh", via: a) == 2 }
        try await a.trigger("refresh", key: 7)
        try await a.trigger("refresh", key: 8)
        try await a.trigger("refresh")
        #expect(try await all.values(3) == [7, 8, .null])
        #expect(try await keyed.values(1) == [7])
        for client in [a, b, c] { await client.close() }
    }

    @Test func aNodeThatLosesNATSServesLocallyReportsNotReadyAndRejoins() async throws {
        let cluster = try await Cluster()
        let (nodeA, nodeB) = (cluster.nodes[0], cluster.nodes[1])
        let (a, b) = (try await nodeA.client(), try await nodeB.client())
        let onB = record("ticks", on: b)
        let onA = record("ticks", on: a)
        try await waitUntil("a to see both subscribers") { try await subscribers(of: "ticks", via: a) == 2 }
        // /metrics tells the same story as /ready: connected, the nodes it hears.
        try await waitUntil("a's metrics to count three nodes") {
            let metrics = try await nodeA.metrics()
            return metrics.contains("hub_cluster_connected 1") && metrics.contains("hub_cluster_nodes 3")
        }
        #expect(try await nodeA.metrics().contains("hub_cluster_dropped_total"))

        cluster.nats.stop()
        for node in cluster.nodes {
            try await waitUntil("node \(node.name) not ready") {
                let ready = try await node.ready()
                return ready.status == 503 && ready.text.contains("cluster: not connected to NATS")
            }
            #expect(try await node.metrics().contains("hub_cluster_connected 0"), "node \(node.name)")
        }
        // Local traffic goes on: a's own subscriber gets a's values.
        try await a.send("alone", to: "ticks")
        #expect(try await onA.values(1) == ["alone"])

        try await cluster.nats.start()
        for node in cluster.nodes {
            try await waitUntil("node \(node.name) ready again") { try await node.ready().status == 200 }
            #expect(try await node.metrics().contains("hub_cluster_connected 1"), "node \(node.name)")
        }
        // Subscriptions are made again: once a hears b's catalog again, a's values reach b.
        try await waitUntil("a to see both subscribers again") { try await subscribers(of: "ticks", via: a) == 2 }
        for index in 0..<20 { try await a.send(.int(Int64(index)), to: "ticks") }
        let expected = (0..<20).map { Value.int(Int64($0)) }
        #expect(try await onA.values(20) == expected)
        // b may also get "alone" if it was buffered for the reconnect: what b gets ends with a's 20, in order.
        var seen: [Value] = []
        try await waitUntil("b to get a's 20 values") {
            for event in onB.events.drain() {
                if case .value(let value) = event { seen.append(value) }
            }
            return seen.suffix(20) == expected[...]
        }
        for client in [a, b] { await client.close() }
    }
}
