import Foundation
import HubCluster
import HubRegistry
import HubValue
import HubWire
import Logging
import NetworkTestSupport
import Testing

/// The checkpoints of running pipelines, against every store (``StoreKind``): a commit
/// stores the checkpoint with the values appended inside it, a load reads the last one
/// after the commits under way, and it survives a restart of a durable store.
@Suite("Store conformance: checkpoints")
struct CheckpointConformanceTests {
    private func withFixture(_ kind: StoreKind, _ body: (StoreFixture) async throws -> Void) async throws {
        let fixture = try await kind.makeFixture()
        do {
            try await body(fixture)
        } catch {
            await fixture.tearDown()
            throw error
        }
        await fixture.tearDown()
    }

    /// What a commit's completion and its appends' completions said, in the order they came.
    private static func commit(
        _ checkpoint: Value, pipeline: String, appending values: [Value], to log: Confined<any SubjectLog>,
        in fixture: StoreFixture
    ) async -> [String] {
        let store = fixture.store
        return await fixture.loop.callback { done in
            var events: [String] = []
            store.value.commit(checkpoint: checkpoint, pipeline: pipeline, appending: {
                for value in values {
                    log.value.append(value) { result in
                        switch result {
                        case let .success(offset): events.append("ack \(offset)")
                        case let .failure(error): events.append("failed \(error.message)")
                        }
                    }
                }
            }, completion: { result in
                switch result {
                case .success: events.append("committed")
                case let .failure(error): events.append("failed commit: \(error.message) \(error.data?.jsonString() ?? "")")
                }
                done(events)
            })
        }
    }

    private static func load(_ pipeline: String, from store: Confined<any SubjectStore>, on loop: TestLoop) async throws -> Value? {
        let result: Result<Value?, HubError> = await loop.callback { done in store.value.loadCheckpoint(pipeline: pipeline, completion: done) }
        return try result.get()
    }

    @Test("a pipeline without a checkpoint loads none", arguments: StoreKind.allCases)
    func none(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let loaded = try await Self.load("counter", from: fixture.store, on: fixture.loop)
            #expect(loaded == nil)
        }
    }

    @Test("a commit stores its checkpoint with the values appended inside it, acked before it completes", arguments: StoreKind.allCases)
    func commitWithAppends(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let log = try await fixture.open("totals")
            #expect(try await Self.load("counter", from: fixture.store, on: fixture.loop) == nil)
            let events = await Self.commit(["sum": 3], pipeline: "counter", appending: [1, 3], to: log, in: fixture)
            #expect(events == ["ack 1", "ack 2", "committed"])
            #expect(try await Self.load("counter", from: fixture.store, on: fixture.loop) == ["sum": 3])
            #expect(try await log.read(after: 0, on: fixture.loop).map(\.value) == [1, 3])
            // A commit without values replaces the checkpoint.
            #expect(await Self.commit(["sum": 4], pipeline: "counter", appending: [], to: log, in: fixture) == ["committed"])
            #expect(try await Self.load("counter", from: fixture.store, on: fixture.loop) == ["sum": 4])
            // Another pipeline's is its own.
            #expect(try await Self.load("other", from: fixture.store, on: fixture.loop) == nil)
        }
    }

    @Test("a load made while commits are under way reads the last of them", arguments: StoreKind.allCases)
    func loadAfterCommitsUnderWay(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let log = try await fixture.open("totals")
            let store = fixture.store
            let loaded: Result<Value?, HubError> = await fixture.loop.callback { done in
                for sequence in 1...5 {
                    store.value.commit(checkpoint: ["sequence": .int(Int64(sequence))], pipeline: "counter", appending: {
                        log.value.append(.int(Int64(sequence))) { _ in }
                    }, completion: { _ in })
                }
                store.value.loadCheckpoint(pipeline: "counter", completion: done)
            }
            #expect(try loaded.get() == ["sequence": 5])
        }
    }

    @Test("a checkpoint and its values survive a restart of a durable store", arguments: StoreKind.allCases.filter(\.isDurable))
    func survivesRestart(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let log = try await fixture.open("totals")
            #expect(await Self.commit(["sum": 6], pipeline: "counter", appending: [1, 3, 6], to: log, in: fixture).last == "committed")
            try await fixture.restart()
            #expect(try await Self.load("counter", from: fixture.store, on: fixture.loop) == ["sum": 6])
            let reopened = try await fixture.open("totals")
            #expect(try await reopened.read(after: 0, on: fixture.loop).map(\.value) == [1, 3, 6])
        }
    }
}
