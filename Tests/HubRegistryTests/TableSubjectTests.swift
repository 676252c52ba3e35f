import HubEngine
import HubRegistry
import HubTesting
import HubValue
import HubWire
import Testing

/// A table subject in a hub over the memory store: what its table holds after upserts and
/// deletes, its bounds counting the changes being stored, and its snapshot's order.
@Suite("Table subjects in the hub")
struct TableSubjectTests {
    private func hub() throws -> (Hub, HubSubject) {
        let hub = Hub(configuration: .init(autoCreate: false), scheduler: ImmediateScheduler.shared)
        let subject = try hub.declareSubject("t", table: SubjectTable.Limits(maxKeys: 2, maxBytes: 1 << 20))
        return (hub, subject)
    }

    @Test func upsertsAndDeletesKeepTheLatestValuePerKey() throws {
        let (hub, subject) = try hub()
        try hub.send(["key": "a", "value": 1], to: "t")
        try hub.send(["key": "b", "value": 2], to: "t")
        try hub.send(["key": "a", "value": 3], to: "t")
        #expect(try hub.lookup("a", inTable: "t") == HistoryEntry(offset: 3, value: 3))
        try hub.send(["key": "b", "value": .null], to: "t")
        #expect(try hub.lookup("b", inTable: "t") == nil)
        #expect(subject.table?.count == 1)
        // The room the delete freed is taken again.
        try hub.send(["key": 5, "value": "five"], to: "t")
        #expect(subject.table?.snapshot() == [
            HistoryEntry(offset: 3, value: ["key": "a", "value": 3]),
            HistoryEntry(offset: 5, value: ["key": "5", "value": "five"]),
        ])
        #expect(throws: HubError.self) { try hub.send(["key": "c", "value": 1], to: "t") }
        #expect(throws: HubError.self) { try hub.send(["key": "c"], to: "t") }
    }

    /// A running pipeline that counts what it reads from a table: the snapshot, then the
    /// changes; after a crash it resumes from its checkpointed offset in the changelog,
    /// reading neither the snapshot nor a change twice.
    @Test func aCheckpointedPipelineReadsATableOnceAcrossACrash() throws {
        let scheduler = TestScheduler()
        let durable = MemoryStore()
        let hub = Hub(
            configuration: .init(autoCreate: false), scheduler: scheduler, historyStore: MemoryStore(), durableStore: durable)
        try hub.declareSubject("t", history: HistoryRetention(size: 100), durable: true, table: SubjectTable.Limits())
        try hub.declareSubject("view", initialValue: 0, history: HistoryRetention(size: 100), durable: true)
        let view = { () -> Value? in (try? hub.subject(named: "view"))?.currentValue }
        let start = {
            try hub.declarePipeline("counter", source: "t | scan(0, $acc + 1) | into(view)", runs: true, checkpoint: CheckpointPolicy())
            try hub.startRunningPipelines()
            scheduler.advance()
        }
        try hub.send(["key": "a", "value": 1], to: "t")
        try hub.send(["key": "b", "value": 2], to: "t")
        try hub.send(["key": "a", "value": 3], to: "t")
        try start()
        #expect(view() == 2, "the snapshot: a and b")
        try hub.send(["key": "c", "value": 1], to: "t")
        scheduler.advance()
        #expect(view() == 3)
        // A crash, a change while the pipeline is down, and a restart from the checkpoint.
        guard case .pipeline(let pipeline)? = hub.entry(named: "counter") else { throw HubError(.internal, "no pipeline") }
        pipeline.release()
        hub.removePipeline(named: "counter")
        try hub.send(["key": "d", "value": .null], to: "t")
        try start()
        #expect(view() == 4, "the delete of d, and nothing read twice")
    }

    /// Outputs of a checkpointed pipeline wait for its checkpoint: checked one by one when
    /// written, they may no longer fit when committed together. The table takes what fits
    /// and the log says which it refused.
    @Test func aChangeRefusedAtTheCommitIsLogged() throws {
        let scheduler = TestScheduler()
        let log = LogRecorder()
        let hub = Hub(
            configuration: .init(autoCreate: false), scheduler: scheduler, logger: log.logger(),
            historyStore: MemoryStore(), durableStore: MemoryStore())
        try hub.declareSubject("input", history: HistoryRetention(size: 100), durable: true)
        let table = try hub.declareSubject("t", durable: true, table: SubjectTable.Limits(maxKeys: 2))
        try hub.declarePipeline(
            "writer", source: "input | map({key: ., value: 1}) | into(t)", runs: true,
            checkpoint: CheckpointPolicy(every: nil, interval: .seconds(10)))
        try hub.startRunningPipelines()
        scheduler.advance()
        for key in ["a", "b", "c"] { try hub.send(.string(key), to: "input") }
        scheduler.advance(by: .seconds(10))
        #expect(table.table?.count == 2)
        #expect(try hub.lookup("c", inTable: "t") == nil)
        let refused = log.entries("table refused a change")
        #expect(refused.count == 1, "\(refused)")
    }
}
