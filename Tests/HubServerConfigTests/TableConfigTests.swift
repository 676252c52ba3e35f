import HubEngine
import HubRegistry
import HubServer
import HubValue
import Testing

/// `kind: table` in `hub.yml`: its bounds, their defaults, and what is refused with it.
@Suite("Broker configuration: table subjects")
struct TableConfigTests {
    @Test func aTableIsDeclaredWithItsBounds() throws {
        let configuration = try parseBroker(yaml: """
            subjects:
              positions: {kind: table, maxKeys: 50, maxBytes: 100000, history: {size: 20}}
              quotes: {kind: table}
              plain: {}
            """)
        let subjects = Dictionary(uniqueKeysWithValues: configuration.subjects.map { ($0.name, $0) })
        #expect(subjects["positions"]?.table == SubjectTable.Limits(maxKeys: 50, maxBytes: 100_000))
        #expect(subjects["quotes"]?.table == SubjectTable.Limits())
        #expect(subjects["plain"]?.table == nil)
        let hub = Hub(configuration: .init(autoCreate: false), scheduler: ImmediateScheduler.shared)
        try configuration.declare(in: hub)
        let positions = try hub.subject(named: "positions")
        #expect(positions.table?.limits.maxKeys == 50)
        #expect(positions.history?.retention == HistoryRetention(size: 20, keepsLatestPerKey: true))
        // A table always keeps its changelog, in memory without durable.
        #expect(try hub.subject(named: "quotes").history?.retention == HistoryRetention(keepsLatestPerKey: true))
    }

    @Test func boundsWithoutATableAndAnInitialValueAreRefused() {
        #expect(parseError("subjects:\n  a: {maxKeys: 5}\n")?.contains("maxKeys bounds a table subject (kind: table)") == true)
        #expect(parseError("subjects:\n  a: {kind: passthrough, maxBytes: 5}\n")?.contains("subjects.a.maxBytes") == true)
        #expect(parseError("subjects:\n  a: {kind: table, initial: {}}\n")?.contains("a table subject has no initial value") == true)
        #expect(parseError("subjects:\n  a: {kind: table, maxKeys: 0}\n")?.contains("subjects.a.maxKeys") == true)
        #expect(parseError("subjects:\n  a: {kind: tables}\n")?.contains("table") == true)
    }
}
