import HubClient
import HubValue
import Testing

/// examples/shares: `items | reduceLatest(downloads, uploads)` into one view value.
@Suite("Scenario: shares list")
struct SharesScenarioTests {
    static let items: Value = [["id": "f1", "name": "report.pdf"], ["id": "f2", "name": "photo.jpg"]]
    static let moreItems: Value = [["id": "f1", "name": "report.pdf"], ["id": "f2", "name": "photo.jpg"], ["id": "f3", "name": "notes.txt"]]
    static let downloads: Value = [["id": "f1", "progress": 0.5]]
    static let uploads: Value = [["id": "f2", "progress": 0.25]]

    static func view(_ items: Value, _ downloads: Value, _ uploads: Value, transfers: Int64) -> Value {
        ["items": items, "downloads": downloads, "uploads": uploads, "transfers": .int(transfers)]
    }

    @Test func theViewUpdatesAsSoonAsAnyFeedChangesWithNullForFeedsNotYetSent() async throws {
        try await Scenario.with("shares") { scenario in
            let view = scenario.subscribe("sharesView")
            try await scenario.waitForPipelineSubscribers(1, of: "sharesView")

            try await scenario.client.send(Self.items, to: "items")
            #expect(try await view.next() == Self.view(Self.items, .null, .null, transfers: 0))
            try await scenario.client.send(Self.downloads, to: "downloads")
            #expect(try await view.next() == Self.view(Self.items, Self.downloads, .null, transfers: 1))
            try await scenario.client.send(Self.uploads, to: "uploads")
            #expect(try await view.next() == Self.view(Self.items, Self.downloads, Self.uploads, transfers: 2))
            try await scenario.client.send([], to: "downloads")
            #expect(try await view.next() == Self.view(Self.items, [], Self.uploads, transfers: 1))
            try await scenario.client.send(Self.moreItems, to: "items")
            #expect(try await view.next() == Self.view(Self.moreItems, [], Self.uploads, transfers: 1))
        }
    }

    @Test func anyFeedMayComeFirst() async throws {
        try await Scenario.with("shares") { scenario in
            let view = scenario.subscribe("sharesView")
            try await scenario.waitForPipelineSubscribers(1, of: "sharesView")
            try await scenario.client.send(Self.uploads, to: "uploads")
            #expect(try await view.next() == Self.view(.null, .null, Self.uploads, transfers: 1))
            try await scenario.client.send(Self.items, to: "items")
            #expect(try await view.next() == Self.view(Self.items, .null, Self.uploads, transfers: 1))
        }
    }

    /// Demand goes end to end (a per-subscriber pipeline): feeds that change
    /// while the view asks for nothing are coalesced into one latest view.
    @Test func changesWithoutDemandAreCoalescedIntoTheLatestView() async throws {
        try await Scenario.with("shares") { scenario in
            let view = scenario.subscribe("sharesView", demand: .max(1))
            try await scenario.waitForPipelineSubscribers(1, of: "sharesView")
            try await scenario.client.send(Self.items, to: "items")
            #expect(try await view.next() == Self.view(Self.items, .null, .null, transfers: 0))
            // Acknowledged sends: the broker has handled them before the next request.
            // Two lists of items in a row: only the latest counts (the older one once
            // came first, a request at a time).
            try await scenario.client.send([], to: "items")
            try await scenario.client.send(Self.downloads, to: "downloads")
            try await scenario.client.send(Self.uploads, to: "uploads")
            try await scenario.client.send(Self.moreItems, to: "items")
            view.request(.max(1))
            #expect(try await view.next() == Self.view(Self.moreItems, Self.downloads, Self.uploads, transfers: 2))
            // The next change comes on the next request.
            try await scenario.client.send([], to: "uploads")
            view.request(.max(1))
            #expect(try await view.next() == Self.view(Self.moreItems, Self.downloads, [], transfers: 1))
        }
    }
}
