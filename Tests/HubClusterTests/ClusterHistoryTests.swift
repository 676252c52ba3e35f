import Foundation
import HubClient
import HubEngine
import HubValue
import HubWire
import NetworkTestSupport
import RemoteTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Subjects with history in a cluster: kept in JetStream streams (offsets = stream
/// sequences, epoch = the stream's identity), read by every node of three real
/// `hubcli serve --cluster` processes over a real `nats-server -js`.
@Suite("History in a cluster (JetStream)", .serialized)
struct ClusterHistoryTests {
    static let config = "subjects:\n  orders: {history: {size: 1000}}\n"

    @Test func aClientWhoseNodeIsKilledResumesOnAnotherSinceItsLastOffset() async throws {
        let cluster = try await ClusterProcessTests.Cluster(config: Self.config, jetStream: true)
        let a = try await cluster.nodes[0].client()
        let b = try await cluster.nodes[1].client()
        // The subscriber on b reads 6 of the first 10 values (its demand), then b dies.
        let onB = EntryRecorder(demand: .max(6))
        b.subscribe(to: "orders", options: SubscribeOptions(since: .offset(0, epoch: nil))).entries.subscribe(onB)
        for index in 1...10 { try await a.send(.int(Int64(index)), to: "orders") }
        let read = try await onB.entries(6)
        #expect(read.map(\.value) == (1...6).map { Value.int(Int64($0)) })
        #expect(read.compactMap(\.offset) == (1...6).map { UInt64($0) })
        let epoch = try #require(read.last?.epoch)
        kill(cluster.nodes[1].process.processIdentifier, SIGKILL)
        await cluster.nodes[1].process.exited()

        // Meanwhile a goes on; the client resumes on c since offset 6, same epoch.
        for index in 11...20 { try await a.send(.int(Int64(index)), to: "orders") }
        let c = try await cluster.nodes[2].client()
        let onC = EntryRecorder(demand: .unlimited)
        c.subscribe(to: "orders", options: SubscribeOptions(since: .offset(6, epoch: epoch))).entries.subscribe(onC)
        let replayed = try await onC.entries(14)
        #expect(replayed.map(\.value) == (7...20).map { Value.int(Int64($0)) })
        #expect(replayed.compactMap(\.offset) == (7...20).map { UInt64($0) })
        #expect(replayed.allSatisfy { $0.epoch == epoch })
        // Live values sent on a after the replay reach c, once each, in order.
        for index in 21...25 { try await a.send(.int(Int64(index)), to: "orders") }
        let live = try await onC.entries(5)
        #expect(live.map(\.value) == (21...25).map { Value.int(Int64($0)) })
        #expect(live.compactMap(\.offset) == (21...25).map { UInt64($0) })
        try await onC.expectNothing(for: .milliseconds(300))
    }

    @Test func demandTwoOnAHistorySubjectGivesTwoValuesUntilMoreIsRequested() async throws {
        let cluster = try await ClusterProcessTests.Cluster(config: Self.config, jetStream: true)
        let a = try await cluster.nodes[0].client()
        let c = try await cluster.nodes[2].client()
        for index in 1...50 { try await a.send(.int(Int64(index)), to: "orders") }
        let onC = EntryRecorder(demand: .max(2))
        c.subscribe(to: "orders", options: SubscribeOptions(since: .offset(0, epoch: nil))).entries.subscribe(onC)
        #expect(try await onC.entries(2).map(\.value) == [1, 2])
        try await onC.expectNothing(for: .milliseconds(500))
        onC.request(3)
        #expect(try await onC.entries(3).map(\.value) == [3, 4, 5])
        try await onC.expectNothing(for: .milliseconds(300))
    }
}

extension ClusterHistoryTests {
    /// A remote subscriber's demand becomes the node's pull requests. Node c
    /// fetches from the stream only what its subscriber asked for; the rest waits in
    /// JetStream (not in c's memory, not dropped) until more is requested.
    @Test func aSubscribersDemandBoundsWhatItsNodePullsFromTheStream() async throws {
        let cluster = try await ClusterProcessTests.Cluster(config: Self.config, jetStream: true)
        let a = try await cluster.nodes[0].client()
        let c = try await cluster.nodes[2].client()
        let onC = EntryRecorder(demand: .max(2))
        c.subscribe(to: "orders").entries.subscribe(onC)
        try await waitUntil("c to count its subscriber") { try await subscribers(of: "orders", via: c) >= 1 }
        for index in 1...200 { try await a.send(.int(Int64(index)), to: "orders") }
        #expect(try await onC.entries(2).map(\.value) == [1, 2])
        try await onC.expectNothing(for: .milliseconds(500))
        // c's consumer has been given the two values asked for, not the 198 others.
        let pulled = try await cluster.nats.consumers().map(\.deliveredStreamSequence)
        #expect(!pulled.isEmpty)
        #expect(pulled.allSatisfy { $0 <= 2 }, "\(pulled)")
        onC.request(3)
        #expect(try await onC.entries(3).map(\.value) == [3, 4, 5])
        try await onC.expectNothing(for: .milliseconds(300))
        onC.request(195)
        let rest = try await onC.entries(195)
        #expect(rest.map(\.value) == (6...200).map { Value.int(Int64($0)) })
        #expect(rest.compactMap(\.offset) == (6...200).map { UInt64($0) })
    }

    /// `complete` and `fail` of a subject with history reach every node after the
    /// stream's values: a subscriber on another node gets all of them, then the end.
    @Test func aCompleteOrFailOnOneNodeEndsTheSubjectEverywhereAfterItsValues() async throws {
        let config = "subjects:\n  orders: {history: {size: 1000}}\n  alarms: {history: {size: 1000}}\n"
        let cluster = try await ClusterProcessTests.Cluster(config: config, jetStream: true)
        let a = try await cluster.nodes[0].client()
        let b = try await cluster.nodes[1].client()
        // The subscriber of orders asks for nothing until a has sent the end: b fetches
        // only what its subscribers ask for, so the end finds b behind the stream, and b
        // must fetch the rest of the values before it finishes.
        let onB = EntryRecorder(demand: .none)
        let alarmsOnB = EntryRecorder(demand: .unlimited)
        // From the streams' first value: a subscription without `since` is live from where b
        // finds the stream once b has caught up with it (the offset of its `subscribed`),
        // which can be after values a sends once b counts the subscription (the count
        // includes subscriptions still catching up). What is checked is the end after
        // every value of the stream, not where a live subscription starts.
        let fromTheFirstValue = SubscribeOptions(since: .offset(0, epoch: nil))
        b.subscribe(to: "orders", options: fromTheFirstValue).entries.subscribe(onB)
        b.subscribe(to: "alarms", options: fromTheFirstValue).entries.subscribe(alarmsOnB)
        try await waitUntil("b to count its subscribers") {
            let orders = try await subscribers(of: "orders", via: b)
            let alarms = try await subscribers(of: "alarms", via: b)
            return orders >= 1 && alarms >= 1
        }
        for index in 1...100 { try await a.send(.int(Int64(index)), to: "orders") }
        try await a.complete("orders")
        onB.request(100)
        let values = try await onB.entries(100)
        #expect(values.map(\.value) == (1...100).map { Value.int(Int64($0)) })
        #expect(values.compactMap(\.offset) == (1...100).map { UInt64($0) })
        guard case .finished = try await onB.events.next() else {
            Issue.record("expected the end of orders on b")
            return
        }
        // b refuses values for it now, as a does.
        await #expect(throws: HubClientError.self) { try await b.send(101, to: "orders") }

        try await a.send(1, to: "alarms")
        try await a.fail("alarms", error: "sensor lost")
        #expect(try await alarmsOnB.entries(1).map(\.value) == [1])
        guard case .failed(let error) = try await alarmsOnB.events.next() else {
            Issue.record("expected alarms to fail on b")
            return
        }
        #expect(error.data == "sensor lost", "\(error)")
    }

    /// A `delete` on one node starts the subject over on every node: their subscribers
    /// get the end, and the next values go into the new stream (new epoch), sent on any node.
    @Test func aDeleteOnOneNodeStartsTheSubjectOverOnEveryNode() async throws {
        let cluster = try await ClusterProcessTests.Cluster(config: Self.config, jetStream: true)
        let a = try await cluster.nodes[0].client()
        let b = try await cluster.nodes[1].client()
        let onB = EntryRecorder(demand: .unlimited)
        // From the first value: a subscription without `since` starts where b finds the
        // stream once it has caught up, which can be after a's first values (as in the test above).
        b.subscribe(to: "orders", options: SubscribeOptions(since: .offset(0, epoch: nil))).entries.subscribe(onB)
        try await waitUntil("b to count its subscriber") { try await subscribers(of: "orders", via: b) >= 1 }
        for index in 1...3 { try await a.send(.int(Int64(index)), to: "orders") }
        let before = try await onB.entries(3)
        let oldEpoch = try #require(before.last?.epoch)
        try await a.delete("orders")
        guard case .finished = try await onB.events.next() else {
            Issue.record("expected the end of orders on b")
            return
        }
        // b sends into the new stream; a subscriber on c reads it from the start.
        try await b.send(7, to: "orders")
        let c = try await cluster.nodes[2].client()
        let onC = EntryRecorder(demand: .unlimited)
        c.subscribe(to: "orders", options: SubscribeOptions(since: .offset(0, epoch: nil))).entries.subscribe(onC)
        let after = try await onC.entries(1)
        #expect(after.map(\.value) == [7])
        #expect(after.compactMap(\.offset) == [1])
        #expect(after.first?.epoch != oldEpoch)
        try await a.send(8, to: "orders")
        #expect(try await onC.entries(1).compactMap(\.offset) == [2])
    }
}

extension ClusterHistoryTests {
    @Test func aDurableSubjectOutlivesEveryNodeInItsFileStream() async throws {
        let storage = FileManager.default.temporaryDirectory.appendingPathComponent("cluster-storage-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: storage) }
        let config = "storage: {path: \"\(storage)\"}\nsubjects:\n  ledger: {durable: true, history: {size: 100}}\n"
        let cluster = try await ClusterProcessTests.Cluster(config: config, jetStream: true)
        let a = try await cluster.nodes[0].client()
        for index in 1...5 { try await a.send(.int(Int64(index)), to: "ledger") }
        let onA = EntryRecorder(demand: .unlimited)
        a.subscribe(to: "ledger", options: SubscribeOptions(since: .offset(0, epoch: nil))).entries.subscribe(onA)
        let before = try await onA.entries(5)
        let epoch = try #require(before.last?.epoch)
        // Every node dies; a new one reads the same history, epoch and offsets from the stream.
        for node in cluster.nodes where node.process.isRunning {
            kill(node.process.processIdentifier, SIGKILL)
            await node.process.exited()
        }
        let fresh = try await NodeProcess(name: "d", natsURL: cluster.nats.url, extraArguments: cluster.arguments)
        try await waitUntil("node d ready") { try await fresh.ready().status == 200 }
        let d = try await fresh.client()
        let onD = EntryRecorder(demand: .unlimited)
        d.subscribe(to: "ledger", options: SubscribeOptions(since: .offset(2, epoch: epoch))).entries.subscribe(onD)
        let after = try await onD.entries(3)
        #expect(after.map(\.value) == [3, 4, 5])
        #expect(after.compactMap(\.offset) == [3, 4, 5])
        #expect(after.allSatisfy { $0.epoch == epoch })
        try await d.send(6, to: "ledger")
        #expect(try await onD.entries(1).compactMap(\.offset) == [6])
    }
}
