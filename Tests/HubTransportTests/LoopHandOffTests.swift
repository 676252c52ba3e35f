import HubLoop
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
        #expect(arrived.map(\.label) == (0..<100).map { "\($0)" })
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

    /// A hand-off that goes with the source loop's writes waits for the loop's next write
    /// (its gathered entries counting as connections waiting to be written: how long the
    /// loop holds is ``WriteCoalescing``'s, tested in virtual time), and goes with it.
    @Test func aHandOffWithTheWritesGoesWithTheSourceLoopsWrite() async throws {
        let (source, destination, _) = try await Self.loops()
        defer { source.shutdown(); destination.shutdown() }
        let handOff = try await onLoop(source) {
            LoopBound(LoopHandOff(from: source, to: destination, handsOverWithWrites: true), eventLoop: source)
        }
        let arrivals = Arrivals()
        let waiting = try await onLoop(source) {
            for index in 0..<3 {
                handOff.value.gather { { arrivals.events.push(("\(index)", destination.inEventLoop)) } }
            }
            handOff.value.post { arrivals.events.push(("posted", destination.inEventLoop)) }
            // Not handed over during the pass; the loop counts four connections waiting.
            return (handOff.value.handOvers, source.pendingConnections)
        }
        #expect(waiting.0 == 0 && waiting.1 == 4)
        // The loop writes at the end of the pass (nothing was written before: no stream).
        let arrived = try await arrivals.events.next(4)
        #expect(arrived.map(\.label) == ["0", "1", "2", "posted"])
        #expect(arrived.allSatisfy { $0.onDestination })
        #expect(try await onLoop(source) { (handOff.value.handOvers, source.pendingConnections) } == (1, 0))
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
