import Foundation
import HubRegistry
import HubValue
import HubWire
import Testing

/// The contract of ``SubjectLog`` and ``SubjectStore``, run against every store
/// (``StoreKind``): offsets, ordering, commits, reads within limits, retention by
/// size and by age, epochs, and what survives a restart.
@Suite("Store conformance")
struct StoreConformanceTests {
    /// Runs `body` with a fresh fixture of `kind` and removes it afterwards.
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

    @Test("a new log is empty, with an epoch and offset 0", arguments: StoreKind.allCases)
    func newLog(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let log = try await fixture.open("prices")
            let position = try await log.position(on: fixture.loop)
            #expect(!position.epoch.isEmpty)
            #expect(position.lastOffset == 0)
            #expect(position.lastValue == nil)
            #expect(try await log.read(after: 0, on: fixture.loop).isEmpty)
        }
    }

    @Test("appends get offsets 1, 2, 3… and complete in order, each before its commit is reported", arguments: StoreKind.allCases)
    func appendsInOrder(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let log = try await fixture.open("orders")
            let count = 200
            // Every append is issued in one loop turn, none waiting for another: the
            // events (completions and commits) must still come in order.
            let events: [String] = await fixture.loop.callback { done in
                var events: [String] = []
                log.value.onCommit = { entry in
                    events.append("commit \(entry.offset) \(entry.value)")
                    if entry.offset == UInt64(count) { done(events) }
                }
                for index in 1...count {
                    log.value.append(.int(Int64(index * 10))) { result in
                        switch result {
                        case let .success(offset): events.append("ack \(offset)")
                        case let .failure(error): events.append("failed \(error)")
                        }
                    }
                }
            }
            let expected = (1...count).flatMap { ["ack \($0)", "commit \($0) \($0 * 10)"] }
            #expect(events == expected)
            let position = try await log.position(on: fixture.loop)
            #expect(position.lastOffset == UInt64(count))
            #expect(position.lastValue == .int(Int64(count * 10)))
        }
    }

    @Test("reads return the kept values after an offset, in order, within through and limit", arguments: StoreKind.allCases)
    func readsWithinBounds(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let log = try await fixture.open("ticks")
            for index in 1...20 { _ = try await log.append(.int(Int64(index)), on: fixture.loop).get() }
            let all = try await log.read(after: 0, on: fixture.loop)
            #expect(all.map(\.offset) == Array(1...20))
            #expect(all.map(\.value) == (1...20).map { Value.int(Int64($0)) })
            #expect(try await log.read(after: 5, limit: 3, on: fixture.loop).map(\.offset) == [6, 7, 8])
            #expect(try await log.read(after: 5, through: 7, on: fixture.loop).map(\.offset) == [6, 7])
            #expect(try await log.read(after: 20, on: fixture.loop).isEmpty)
            #expect(try await log.read(after: 25, on: fixture.loop).isEmpty)
            #expect(try await log.read(after: 7, through: 7, on: fixture.loop).isEmpty)
        }
    }

    @Test("a page stops after the value that reaches maxBytes, and holds one value at least", arguments: StoreKind.allCases)
    func readsWithinBytes(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let log = try await fixture.open("blobs")
            let text = String(repeating: "x", count: 998)  // 1000 bytes of JSON with its quotes
            for _ in 1...10 { _ = try await log.append(.string(text), on: fixture.loop).get() }
            #expect(try await log.read(after: 0, maxBytes: 3000, on: fixture.loop).map(\.offset) == [1, 2, 3])
            #expect(try await log.read(after: 0, maxBytes: 2500, on: fixture.loop).map(\.offset) == [1, 2, 3])
            #expect(try await log.read(after: 4, maxBytes: 10, on: fixture.loop).map(\.offset) == [5])
        }
    }

    @Test("values round-trip exactly", arguments: StoreKind.allCases)
    func exactValues(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let values: [Value] = [
                .null, true, .int(.max), .int(.min), 0.1, -2.5e-300, "héllo \"wörld\"\n\u{1F600}",
                ["a": [1, 2, ["b": nil]], "z": "last", "m": 3.25],
                .array([]), .object([:]),
            ]
            let log = try await fixture.open("mixed")
            for value in values { _ = try await log.append(value, on: fixture.loop).get() }
            #expect(try await log.read(after: 0, on: fixture.loop).map(\.value) == values)
        }
    }

    @Test("the size bound keeps the newest values; offsets go on", arguments: StoreKind.allCases)
    func sizeBound(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let log = try await fixture.open("bounded", HistoryRetention(size: 4))
            for index in 1...10 { _ = try await log.append(.int(Int64(index)), on: fixture.loop).get() }
            #expect(try await log.read(after: 0, on: fixture.loop).map(\.offset) == [7, 8, 9, 10])
            #expect(try await log.read(after: 8, on: fixture.loop).map(\.offset) == [9, 10])
            let position = try await log.position(on: fixture.loop)
            #expect(position.lastOffset == 10)
            #expect(position.lastValue == 10)
        }
    }

    @Test("values older than the ttl are never returned; the last offset and value stay", arguments: StoreKind.allCases)
    func ttlBound(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let log = try await fixture.open("fresh", HistoryRetention(size: 100, ttl: .seconds(10)))
            _ = try await log.append("old", on: fixture.loop).get()
            fixture.clock.advance(by: .seconds(6))
            _ = try await log.append("newer", on: fixture.loop).get()
            #expect(try await log.read(after: 0, on: fixture.loop).map(\.value) == ["old", "newer"])
            fixture.clock.advance(by: .seconds(6))
            #expect(try await log.read(after: 0, on: fixture.loop).map(\.value) == ["newer"])
            _ = try await log.append("newest", on: fixture.loop).get()
            #expect(try await log.read(after: 0, on: fixture.loop).map(\.offset) == [2, 3])
            fixture.clock.advance(by: .seconds(30))
            #expect(try await log.read(after: 0, on: fixture.loop).isEmpty)
            let position = try await log.position(on: fixture.loop)
            #expect(position.lastOffset == 3)
            #expect(position.lastValue == "newest")
            _ = try await log.append("again", on: fixture.loop).get()
            #expect(try await log.read(after: 0, on: fixture.loop).map(\.offset) == [4])
        }
    }

    @Test("each subject has its own epoch and offsets; opening again gives the same log", arguments: StoreKind.allCases)
    func subjectsAreSeparate(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let first = try await fixture.open("a")
            let second = try await fixture.open("b")
            _ = try await first.append(1, on: fixture.loop).get()
            _ = try await first.append(2, on: fixture.loop).get()
            #expect(try await second.append(3, on: fixture.loop).get() == 1)
            let a = try await first.position(on: fixture.loop)
            let b = try await second.position(on: fixture.loop)
            #expect(a.epoch != b.epoch)
            let again = try await fixture.open("a")
            let position = try await again.position(on: fixture.loop)
            #expect(position.epoch == a.epoch)
            #expect(position.lastOffset == 2)
            #expect(try await again.read(after: 0, on: fixture.loop).map(\.value) == [1, 2])
        }
    }

    @Test("a restart keeps the epoch, offsets, last value and history of a durable store; others begin a new epoch", arguments: StoreKind.allCases)
    func restart(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let log = try await fixture.open("kept", HistoryRetention(size: 3))
            for index in 1...5 { _ = try await log.append(.int(Int64(index)), on: fixture.loop).get() }
            let before = try await log.position(on: fixture.loop)
            try await fixture.restart()
            let reopened = try await fixture.open("kept", HistoryRetention(size: 3))
            let after = try await reopened.position(on: fixture.loop)
            if kind.isDurable {
                #expect(after.epoch == before.epoch)
                #expect(after.lastOffset == 5)
                #expect(after.lastValue == 5)
                #expect(try await reopened.read(after: 0, on: fixture.loop).map(\.value) == [3, 4, 5])
                #expect(try await reopened.append(6, on: fixture.loop).get() == 6)
            } else {
                #expect(after.epoch != before.epoch)
                #expect(after.lastOffset == 0)
                #expect(after.lastValue == nil)
                #expect(try await reopened.read(after: 0, on: fixture.loop).isEmpty)
                #expect(try await reopened.append(6, on: fixture.loop).get() == 1)
            }
        }
    }

    @Test("a removed log is gone, across a restart too: the next one of that name begins a new epoch", arguments: StoreKind.allCases)
    func removal(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let log = try await fixture.open("doomed")
            let other = try await fixture.open("kept")
            for index in 1...3 { _ = try await log.append(.int(Int64(index)), on: fixture.loop).get() }
            _ = try await other.append("stays", on: fixture.loop).get()
            let before = try await log.position(on: fixture.loop)
            let store = fixture.store
            try await fixture.loop.run { try store.value.removeLog(subject: "doomed") }
            let fresh = try await fixture.open("doomed")
            let after = try await fresh.position(on: fixture.loop)
            #expect(after.epoch != before.epoch)
            #expect(after.lastOffset == 0 && after.lastValue == nil)
            #expect(try await fresh.read(after: 0, on: fixture.loop).isEmpty)
            #expect(try await fresh.append("new", on: fixture.loop).get() == 1)
            try await fixture.restart()
            let reopened = try await fixture.open("doomed")
            let kept = try await fixture.open("kept")
            if kind.isDurable {
                #expect(try await reopened.read(after: 0, on: fixture.loop).map(\.value) == ["new"])
                #expect(try await kept.read(after: 0, on: fixture.loop).map(\.value) == ["stays"])
            }
            #expect(try await reopened.position(on: fixture.loop).epoch != before.epoch)
        }
    }

    @Test("a retention given when the log is opened again applies from the next commit", arguments: StoreKind.allCases)
    func retentionChanges(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let log = try await fixture.open("resized", HistoryRetention(size: 10))
            for index in 1...8 { _ = try await log.append(.int(Int64(index)), on: fixture.loop).get() }
            let smaller = try await fixture.open("resized", HistoryRetention(size: 2))
            _ = try await smaller.append(9, on: fixture.loop).get()
            #expect(try await smaller.read(after: 0, on: fixture.loop).map(\.offset) == [8, 9])
        }
    }

    @Test("paging through a long history with small pages gives every value once, in order", arguments: StoreKind.allCases)
    func paging(kind: StoreKind) async throws {
        try await withFixture(kind) { fixture in
            let log = try await fixture.open("long", HistoryRetention(size: 5000))
            let count = 2000
            _ = await fixture.loop.callback { (done: @escaping (Bool) -> Void) in
                for index in 1...count {
                    log.value.append(.int(Int64(index))) { _ in if index == count { done(true) } }
                }
            }
            var seen: [Int64] = []
            var cursor: UInt64 = 0
            while true {
                let page = try await log.read(after: cursor, limit: 97, on: fixture.loop)
                guard let last = page.last else { break }
                seen += page.compactMap(\.value.intValue)
                cursor = last.offset
            }
            #expect(seen == (1...Int64(count)).map { $0 })
        }
    }
}
