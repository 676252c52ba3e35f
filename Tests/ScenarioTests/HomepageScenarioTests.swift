import HubClient
import HubValue
import Testing

/// examples/homepage: rows per topic, paginated by `loadMore` with a topic key, re-run by `reload`;
/// each row is seed 000's recursive paginated publisher, a named pipeline `page` that calls
/// itself for the next page (named pipelines called with an argument, a pipeline chosen by
/// a condition in `switchToLatest`, over a real broker).
@Suite("Scenario: homepage rows")
struct HomepageScenarioTests {
    static let medias = """
        {"news": [[{"id": "n1"}, {"id": "n2"}], [{"id": "n3"}, {"id": "n4"}], [{"id": "n5"}]],
         "sports": [[{"id": "s1"}, {"id": "s2"}], [{"id": "s3"}]]}
        """

    static func row(_ topic: String, page: Int64, _ ids: [String], hasMore: Bool) -> Value {
        ["topic": .string(topic), "page": .int(page), "medias": .array(ids.map { ["id": .string($0)] }), "hasMore": .bool(hasMore)]
    }

    static let newsFirst = row("news", page: 0, ["n1", "n2"], hasMore: true)
    static let sportsFirst = row("sports", page: 0, ["s1", "s2"], hasMore: true)

    @Test func loadMoreAppendsOneTopicsNextPageAndReloadStartsOver() async throws {
        try await Scenario.with("homepage") { scenario in
            let client = scenario.client
            try await client.send(["news", "sports"], to: "topics")
            try await client.send(json(Self.medias), to: "medias")

            // At subscription: every row with its first page, in topic order.
            let view = scenario.subscribe("homepage")
            #expect(try await view.next("the first rows") == [Self.newsFirst, Self.sportsFirst])

            // loadMore "news": the news row gets page 1 appended; sports stays.
            try await client.trigger("loadMore", key: "news")
            let newsTwoPages = Self.row("news", page: 1, ["n1", "n2", "n3", "n4"], hasMore: true)
            #expect(try await view.next() == [newsTwoPages, Self.sportsFirst])
            try await client.trigger("loadMore", key: "sports")
            let sportsAll = Self.row("sports", page: 1, ["s1", "s2", "s3"], hasMore: false)
            #expect(try await view.next() == [newsTwoPages, sportsAll])
            try await client.trigger("loadMore", key: "news")
            let newsAll = Self.row("news", page: 2, ["n1", "n2", "n3", "n4", "n5"], hasMore: false)
            #expect(try await view.next() == [newsAll, sportsAll])
            // A key that is no topic changes nothing, nor does loadMore of a row past its last
            // page: its paginated pipeline has finished (the next value is the reload's).
            try await client.trigger("loadMore", key: "weather")
            try await client.trigger("loadMore", key: "sports")

            // New data shows only on reload, which starts every row from its first page.
            try await client.send(["music", "news"], to: "topics")
            try await client.send(json(#"{"music": [[{"id": "m1"}]], "news": [[{"id": "n0"}], [{"id": "n1"}]]}"#), to: "medias")
            try await client.trigger("reload")
            #expect(try await view.next("the reloaded rows") == [
                Self.row("music", page: 0, ["m1"], hasMore: false), Self.row("news", page: 0, ["n0"], hasMore: true),
            ])
            // Pagination after a reload counts from the new first page.
            try await client.trigger("loadMore", key: "news")
            #expect(try await view.next() == [
                Self.row("music", page: 0, ["m1"], hasMore: false), Self.row("news", page: 1, ["n0", "n1"], hasMore: false),
            ])
        }
    }

    @Test func theRowsWaitForTheTopics() async throws {
        try await Scenario.with("homepage") { scenario in
            try await scenario.client.send(json(Self.medias), to: "medias")
            let view = scenario.subscribe("homepage")
            try await scenario.waitForPipelineSubscribers(1, of: "homepage")
            try await scenario.client.send(["sports"], to: "topics")
            #expect(try await view.next() == [Self.sportsFirst])
        }
    }

    @Test func eachViewPaginatesFromItsOwnSubscription() async throws {
        try await Scenario.with("homepage") { scenario in
            let client = scenario.client
            try await client.send(["news", "sports"], to: "topics")
            try await client.send(json(Self.medias), to: "medias")
            let first = scenario.subscribe("homepage")
            #expect(try await first.next() == [Self.newsFirst, Self.sportsFirst])
            try await client.trigger("loadMore", key: "sports")
            let sportsAll = Self.row("sports", page: 1, ["s1", "s2", "s3"], hasMore: false)
            #expect(try await first.next() == [Self.newsFirst, sportsAll])
            // A second view starts at the first pages; a loadMore reaches both.
            let second = scenario.subscribe("homepage")
            #expect(try await second.next() == [Self.newsFirst, Self.sportsFirst])
            try await client.trigger("loadMore", key: "news")
            let newsTwoPages = Self.row("news", page: 1, ["n1", "n2", "n3", "n4"], hasMore: true)
            #expect(try await first.next() == [newsTwoPages, sportsAll])
            #expect(try await second.next() == [newsTwoPages, Self.sportsFirst])
        }
    }
}
