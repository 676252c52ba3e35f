import HubEngine
import HubRegistry
import HubTesting
import HubValue
import HubWire
import Testing

/// `list` pages the catalog (a catalog of 100,000 names was once one message over
/// 16 MiB, and every `list` closed the connection with 4008).
@Suite("Hub: catalog pages")
struct CatalogPageTests {
    static func names(_ page: Catalog) -> [String] {
        page.subjects.map(\.name) + page.pipelines.map(\.name) + page.triggers.map(\.name)
    }

    /// Every page in turn from the start; the names in order.
    static func walk(_ hub: Hub, limit: Int, maxBytes: Int = 1 << 20, isVisible: (String) -> Bool = { _ in true }) -> [[String]] {
        var pages: [[String]] = []
        var after: CatalogCursor?
        repeat {
            let page = hub.catalog(after: after, limit: limit, maxBytes: maxBytes, isVisible: isVisible)
            pages.append(names(page))
            if let next = page.next, let previous = after { #expect(previous < next) }
            after = page.next
        } while after != nil && pages.count < 10_000
        return pages
    }

    static func populated() throws -> Hub {
        let hub = Hub(scheduler: TestScheduler())
        for index in (0..<25).reversed() { try hub.send(.int(Int64(index)), to: "s\(index)") }
        _ = try hub.declareTrigger("a_trigger")
        _ = try hub.declareTrigger("z_trigger")
        return hub
    }

    @Test func pagesFollowCatalogOrderWithoutGapOrRepeat() throws {
        let hub = try Self.populated()
        let whole = Self.names(hub.catalog())
        #expect(whole.count == 27)
        for limit in [1, 2, 7, 26, 27, 100] {
            let pages = Self.walk(hub, limit: limit)
            #expect(pages.flatMap { $0 } == whole, "limit \(limit)")
            #expect(pages.dropLast().allSatisfy { $0.count == limit }, "limit \(limit)")
            #expect(pages.count == (27 + limit - 1) / limit, "limit \(limit)")
        }
    }

    @Test func subjectsComeBeforeTriggersWhateverTheirNames() throws {
        let hub = try Self.populated()
        let first = hub.catalog(after: nil, limit: 25, maxBytes: 1 << 20)
        #expect(first.subjects.count == 25 && first.triggers.isEmpty)
        #expect(first.next == CatalogCursor(.subject, "s9"))
        let second = hub.catalog(after: first.next, limit: 25, maxBytes: 1 << 20)
        #expect(second.triggers.map(\.name) == ["a_trigger", "z_trigger"] && second.next == nil)
    }

    @Test func aCursorNeedNotNameAnExistingEntry() throws {
        let hub = try Self.populated()
        let page = hub.catalog(after: CatalogCursor(.subject, "s2"), limit: 3, maxBytes: 1 << 20)
        #expect(Self.names(page) == ["s20", "s21", "s22"])
        let gone = hub.catalog(after: CatalogCursor(.subject, "s20x"), limit: 1, maxBytes: 1 << 20)
        #expect(Self.names(gone) == ["s21"])
        let past = hub.catalog(after: CatalogCursor(.trigger, "zzz"), limit: 10, maxBytes: 1 << 20)
        #expect(Self.names(past).isEmpty && past.next == nil)
    }

    @Test func aPageIsBoundedInBytesButHoldsAtLeastOneEntry() throws {
        let hub = Hub(scheduler: TestScheduler())
        let big = Value.string(String(repeating: "x", count: 10_000))
        for index in 0..<10 { try hub.declareSubject("big\(index)", initialValue: big) }
        let pages = Self.walk(hub, limit: 10_000, maxBytes: 25_000)
        #expect(pages.map(\.count) == [2, 2, 2, 2, 2])
        let tiny = Self.walk(hub, limit: 10_000, maxBytes: 10)
        #expect(tiny.count == 10 && tiny.allSatisfy { $0.count == 1 })
    }

    @Test func pagesCountOnlyTheVisibleNames() throws {
        let hub = try Self.populated()
        let pages = Self.walk(hub, limit: 2) { $0.hasPrefix("s1") }
        #expect(pages.flatMap { $0 } == ["s1", "s10", "s11", "s12", "s13", "s14", "s15", "s16", "s17", "s18", "s19"])
        #expect(pages.dropLast().allSatisfy { $0.count == 2 })
    }

    /// A cluster's catalog is paged in memory (`Catalog.page`): the same pages as the hub's own.
    @Test func aCatalogPagedInMemoryGivesTheHubsPages() throws {
        let hub = Hub(scheduler: TestScheduler())
        for index in 0..<30 { try hub.send(.int(Int64(index)), to: "s\(index % 17)_\(index)") }
        for index in 0..<5 { _ = try hub.declareTrigger("t\(index)") }
        try hub.declareSubject("big", initialValue: .string(String(repeating: "x", count: 3000)))
        let whole = hub.catalog()
        for (limit, maxBytes) in [(1, 1 << 20), (4, 1 << 20), (7, 1000), (100, 3500), (100, 1 << 20)] {
            for visible in [{ (_: String) in true }, { (name: String) in name.hasPrefix("s1") || name.hasPrefix("t") }] {
                var after: CatalogCursor?
                repeat {
                    let own = hub.catalog(after: after, limit: limit, maxBytes: maxBytes, isVisible: visible)
                    let inMemory = whole.page(after: after, limit: limit, maxBytes: maxBytes, isVisible: visible)
                    #expect(own == inMemory, "limit \(limit), after \(String(describing: after))")
                    after = own.next
                } while after != nil
            }
        }
    }

    @Test func systemSubjectsAreNotListed() throws {
        let hub = try Self.populated()
        try hub.declareSubject("$sys.stats", initialValue: 1)
        #expect(!Self.walk(hub, limit: 5).flatMap { $0 }.contains("$sys.stats"))
        #expect(Self.walk(hub, limit: 5).flatMap { $0 }.count == 27)
    }
}
