import NetworkTestSupport
@testable import HubTransport
import Testing

/// Work one loop hands another in batches: order, gathering at hand-over, early hand-over.
@Suite("LoopHandOff")
struct LoopHandOffTests {
    /// What ran on the destination: each item's label, and whether it ran on its thread.
    final class Arrivals: @unchecked Sendable {
        let events = EventQueue<(label: String, onDestination: Bool)>()
    }

    /// Two loops and a hand-off from the first to the second, made on the first.
    static func loops() async throws -> (EventLoop, EventLoop, LoopBound<LoopHandOff>) {
        let source = try EventLoop(configuration: .init(name: "source"))
        let destination = try EventLoop(configuration: .init(name: "destination"))
        let handOff = try await onLoop(source) {
            LoopBound(LoopHandOff(from: source, to: destination), eventLoop: source)
        }
        return (source, destination, handOff)
    }

    @Test func workPostedInOnePassArrivesInOrderInOneHandOver() async throws {
        let (source, destination, handOff) = try await Self.loops()
        defer { source.shutdown(); destination.shutdown() }
        let arrivals = Arrivals()
        try await onLoop(source) {
            for index in 0..<100 {
                handOff.value.post { arrivals.events.push(("\(index)", destination.inEventLoop)) }
            }
            // Nothing crosses before the end of the pass.
            #expect(handOff.value.handOvers == 0)
        }
        let arrived = try await arrivals.events.next(100)
        #expect(arrived.map(\.label) == (0..<100).map(String.init))
        #expect(arrived.allSatisfy { $0.onDestination })
        #expect(try await onLoop(source) { handOff.value.handOvers } == 1)
    }

    @Test func aGatherKeepsItsPlaceAndIsEvaluatedAtTheHandOver() async throws {
        let (source, destination, handOff) = try await Self.loops()
        defer { source.shutdown(); destination.shutdown() }
        let arrivals = Arrivals()
        final class Batch { var items: [String] = [] }
        try await onLoop(source) {
            let batch = Batch()
            handOff.value.post { arrivals.events.push(("first", destination.inEventLoop)) }
            handOff.value.gather {
                let items = batch.items.joined(separator: "+")
                return { arrivals.events.push((items, destination.inEventLoop)) }
            }
            handOff.value.gather { nil }
            handOff.value.post { arrivals.events.push(("last", destination.inEventLoop)) }
            // Grown after the gather was posted, before the end of the pass.
            batch.items = ["a", "b"]
        }
        let arrived = try await arrivals.events.next(3)
        #expect(arrived.map(\.label) == ["first", "a+b", "last"])
        #expect(arrived.allSatisfy { $0.onDestination })
    }

    @Test func handOverNowSendsWhatWasPostedWithoutWaitingForTheEndOfThePass() async throws {
        let (source, destination, handOff) = try await Self.loops()
        defer { source.shutdown(); destination.shutdown() }
        let arrivals = Arrivals()
        let counts = try await onLoop(source) {
            handOff.value.post { arrivals.events.push(("early", destination.inEventLoop)) }
            handOff.value.handOverNow()
            let afterEarly = handOff.value.handOvers
            handOff.value.post { arrivals.events.push(("late", destination.inEventLoop)) }
            return afterEarly
        }
        #expect(counts == 1)
        #expect(try await arrivals.events.next(2).map(\.label) == ["early", "late"])
        #expect(try await onLoop(source) { handOff.value.handOvers } == 2)
    }

    @Test func aConnectionTallyBoundsTheConnectionsOfEveryServerThatSharesIt() {
        let tally = ConnectionTally()
        #expect(tally.reserve(limit: 2))
        #expect(tally.reserve(limit: 2))
        #expect(!tally.reserve(limit: 2))
        #expect(tally.count == 2)
        tally.release()
        #expect(tally.reserve(limit: 2))
        #expect(tally.count == 2)
    }
}
