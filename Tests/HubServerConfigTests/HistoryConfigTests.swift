import HubEngine
import HubRegistry
import HubServer
import HubSQLite
import Testing

@Suite("Broker configuration: history and storage")
struct HistoryConfigTests {
    @Test func historyDurableStorageAndDefaultsAreRead() throws {
        let configuration = try parseBroker(yaml: """
            storage: {path: data, sync: normal}
            defaults: {history: {size: 7}}
            subjects:
              a: {history: {size: 50, ttl: "10m"}}
              b: {history: {ttl: "2s"}}
              c: {history: }
              d: {durable: true, kind: currentValue, initial: 1}
              e:
            """, file: "/etc/hub/hub.yml")
        #expect(configuration.service.storage as? SQLiteStorage == SQLiteStorage(path: "/etc/hub/data", sync: .normal))
        #expect(configuration.service.hub.defaultHistory == HistoryRetention(size: 7))
        let subjects = Dictionary(uniqueKeysWithValues: configuration.subjects.map { ($0.name, $0) })
        #expect(subjects["a"]?.history == HistoryRetention(size: 50, ttl: .seconds(600)))
        #expect(subjects["b"]?.history == HistoryRetention(size: HistoryRetention.defaultSize, ttl: .seconds(2)))
        #expect(subjects["c"]?.history == HistoryRetention())
        #expect(subjects["d"]?.durable == true && subjects["d"]?.history == nil)
        #expect(subjects["e"]?.history == nil && subjects["e"]?.durable == false)
        try configuration.check()
        let shared = try parseBroker(yaml: "storage: {path: /data, shared: true}\n", file: "/etc/hub/hub.yml")
        #expect(shared.service.storage as? SQLiteStorage == SQLiteStorage(path: "/data", sync: .full, shared: true))
    }

    @Test("a broker built without a durable store refuses a storage section")
    func storageNeedsAStoreKind() {
        #expect(throws: ConfigurationError.self) { try BrokerConfiguration.parse(yaml: "storage: {path: x}\n") }
        do {
            _ = try BrokerConfiguration.parse(yaml: "storage: {path: x}\n")
        } catch {
            #expect(error.description == "hub.yml:1:1: storage: this broker has no durable store to configure")
        }
    }

    @Test func declaredSubjectsGetTheirHistory() throws {
        let configuration = try parseBroker(yaml: """
            defaults: {history: {size: 3}}
            subjects:
              kept: {history: {size: 2}}
              plain:
            """)
        let hub = Hub(configuration: configuration.service.hub, scheduler: ImmediateScheduler.shared)
        try configuration.declare(in: hub)
        guard case .subject(let kept)? = hub.entry(named: "kept"), case .subject(let plain)? = hub.entry(named: "plain") else {
            Issue.record("subjects not declared")
            return
        }
        #expect(kept.history?.retention == HistoryRetention(size: 2))
        #expect(plain.history == nil)
        #expect(try hub.subject(named: "fresh").history?.retention == HistoryRetention(size: 3))
    }

    @Test func mistakesNameTheirKey() {
        #expect(parseError("subjects:\n  a: {durable: true}\n")
            == "hub.yml:2:16: subjects.a.durable: a durable subject needs storage.path (where the broker stores it)")
        #expect(parseError("storage: {sync: full}\n")?.contains("storage: missing 'path'") == true)
        #expect(parseError("storage: {path: x, sync: sometimes}\n")?.contains("storage.sync") == true)
        #expect(parseError("storage: {path: x, colour: red}\n")?.contains("storage.colour") == true)
        #expect(parseError("storage: {path: x, shared: sometimes}\n")?.contains("storage.shared") == true)
        // The store's module reads its own keys; the error still points at the value.
        #expect(parseError("storage: {path: x, sync: sometimes}\n")
            == "hub.yml:1:26: storage.sync: expected one of full, normal (got \"sometimes\")")
        #expect(parseError("storage: {path: x, onCorruption: 3}\n")
            == "hub.yml:1:34: storage.onCorruption: expected one of refuse, quarantine (got 3)")
        #expect(parseError("subjects:\n  a: {history: {size: 0}}\n")?.contains("subjects.a.history.size") == true)
        #expect(parseError("subjects:\n  a: {history: {ttl: 5}}\n")?.contains("subjects.a.history.ttl") == true)
        #expect(parseError("subjects:\n  a: {history: {depth: 5}}\n")?.contains("subjects.a.history.depth") == true)
        #expect(parseError("subjects:\n  a: {history: 5}\n")?.contains("subjects.a.history") == true)
        #expect(parseError("defaults: {history: {size: -1}}\n")?.contains("defaults.history.size") == true)
        #expect(parseError("defaults: {durable: true}\n")?.contains("defaults.durable") == true)
    }
}
