@testable import HubCluster
import HubValue
import HubWire
import Testing

/// The merge behind a clustered `list`, and the NATS names of hub names.
@Suite("Cluster catalog and subject names")
struct ClusterCatalogTests {
    let second: Int64 = 1_000_000_000

    @Test func sumsSubscribersByNameAndKeepsLocalValuesAndTheWorstState() {
        var remote = ClusterCatalog(timeout: .seconds(3), maxNodes: 8)
        let local = Catalog(
            subjects: [.init(name: "prices", kind: .passthrough, subscribers: 2),
                       .init(name: "level", kind: .currentValue, value: 5, subscribers: 0)],
            pipelines: [.init(name: "big", subscribers: 1)], triggers: [.init(name: "refresh", subscribers: 1)],
            connections: 4)
        remote.record(Catalog(
            subjects: [.init(name: "prices", kind: .passthrough, subscribers: 3, state: .completed),
                       .init(name: "level", kind: .currentValue, value: 4, subscribers: 1),
                       .init(name: "orders", kind: .passthrough, subscribers: 1)],
            pipelines: [.init(name: "big", subscribers: 2)], triggers: [.init(name: "refresh", subscribers: 5)]),
            from: "b", at: 0)
        remote.record(Catalog(subjects: [.init(name: "orders", kind: .passthrough, subscribers: 4)]), from: "c", at: second)

        let merged = remote.merging(local, at: 2 * second)
        #expect(merged.subjects.map(\.name) == ["level", "orders", "prices"])
        #expect(merged.subjects.map(\.subscribers) == [1, 5, 5])
        #expect(merged.subjects[0].value == 5)  // the local value
        #expect(merged.subjects[2].state == .completed)
        #expect(merged.pipelines == [.init(name: "big", subscribers: 3)])
        #expect(merged.triggers == [.init(name: "refresh", subscribers: 6)])
        #expect(merged.connections == 4)  // the answering node's
        #expect(remote.liveNodes(at: 2 * second) == ["b", "c"])

        // b is not heard from for more than the timeout: forgotten.
        let later = remote.merging(local, at: 3 * second + 1)
        #expect(later.subjects.map(\.subscribers) == [0, 4, 2])
        #expect(remote.liveNodes(at: 3 * second + 1) == ["c"])
    }

    @Test func keepsAtMostMaxNodes() {
        var remote = ClusterCatalog(timeout: .seconds(3), maxNodes: 2)
        for node in ["a", "b", "c"] {
            remote.record(Catalog(subjects: [.init(name: "x", kind: .passthrough, subscribers: 1)]), from: node, at: 0)
        }
        #expect(remote.liveNodes(at: 0) == ["a", "b"])
        #expect(remote.merging(Catalog(), at: 0).subjects.first?.subscribers == 2)
    }

    @Test func hubNamesBecomeNATSSubjectsAndKeys() {
        let names = ClusterSubjectNames()
        #expect(names.values("prices.AAPL") == "hub.v.prices.AAPL")
        #expect(names.activations("refresh") == "hub.t.refresh")
        // Empty NATS tokens cannot travel as they are.
        #expect(names.values("a..b") == "hub.vx.612e2e62")
        #expect(names.values("a.") == "hub.vx.612e")
        #expect(names.currentValueKey("level") == "level")
        #expect(names.currentValueKey("a..b") == "=612e2e62")
        #expect(names.control == "hub.ctl")
        #expect(ClusterSubjectNames(prefix: "eu").catalog == "eu.catalog")
    }
}
