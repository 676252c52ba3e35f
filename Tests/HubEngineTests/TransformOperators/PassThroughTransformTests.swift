import Testing
import HubEngine
import HubTesting

private struct Point: Equatable {
    var x: Int
    var y: Int
    var label: String
}

/// compactMap, removeDuplicates, replaceNil, mapError, setFailureType and the key-path maps:
/// demand passes through, dropped values give back `.max(1)`.
@Suite("TransformOperators: pass-through transforms")
struct PassThroughTransformTests {
    typealias Probe = DemandProbe<Int, TestError>

    @Test func compactMapDropsNilAndGivesBackDemand() {
        let probe = Probe()
        let recorder = probe.compactMap { $0 > 0 ? $0 * 2 : nil }.record(initialDemand: .max(2), demandPerValue: .none)
        #expect(probe.requests == [.max(2)])
        #expect(probe.send(0) == .max(1))
        #expect(probe.send(3) == .none)
        probe.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .value(6), .failure(.oops)])
    }

    @Test func compactMapCancelReachesUpstream() {
        let probe = Probe()
        let recorder = probe.compactMap { $0 }.record()
        recorder.cancel()
        #expect(probe.cancellations == 1)
    }

    @Test func removeDuplicatesComparesWithThePreviousUpstreamValue() {
        let probe = Probe()
        // Not transitive: 1, 2, 3 are each "duplicates" of their predecessor.
        let recorder = probe.removeDuplicates { abs($0 - $1) <= 1 }.record(initialDemand: .max(5))
        #expect(probe.send(1) == .none)
        #expect(probe.send(2) == .max(1))
        #expect(probe.send(3) == .max(1))
        probe.send(7)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(1), .value(7), .finished])
        #expect(probe.requests == [.max(5)])
    }

    @Test func removeDuplicatesEquatable() {
        let recorder = [1, 1, 2, 2, 2, 1, 3, 3].publisher.removeDuplicates().record()
        #expect(recorder.values == [1, 2, 1, 3])
        #expect(recorder.isCompleted)
    }

    @Test func removeDuplicatesCancelStopsDelivery() {
        let probe = Probe()
        let recorder = probe.removeDuplicates().record()
        probe.send(1)
        recorder.cancel()
        recorder.cancel()
        probe.send(2)
        probe.send(completion: .finished)
        #expect(probe.cancellations == 1)
        #expect(recorder.events == [.subscription, .value(1)])
    }

    @Test func replaceNilReplacesOnlyNil() {
        let probe = DemandProbe<Int?, TestError>()
        let recorder = probe.replaceNil(with: -1).record(initialDemand: .max(2))
        probe.send(nil)
        probe.send(4)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(-1), .value(4), .finished])
        #expect(probe.requests == [.max(2)])
    }

    @Test func mapErrorTransformsOnlyTheFailure() {
        let probe = Probe()
        let recorder = probe.mapError { _ in TestError.other(7) }.record(initialDemand: .max(1))
        #expect(probe.requests == [.max(1)])
        probe.send(3)
        probe.send(completion: .failure(.oops))
        #expect(recorder.events == [.subscription, .value(3), .failure(.other(7))])
        recorder.cancel()
        #expect(probe.cancellations == 1)
    }

    @Test func setFailureTypePassesValuesAndFinished() {
        let probe = DemandProbe<Int, Never>()
        let publisher = probe.setFailureType(to: TestError.self)
        let recorder = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
        publisher.subscribe(recorder)
        #expect(probe.requests == [.max(1)])
        probe.send(8)
        probe.send(completion: .finished)
        #expect(recorder.events == [.subscription, .value(8), .finished])
        recorder.cancel()
        #expect(probe.cancellations == 1)
        // Setting it again replaces the failure type instead of adding a layer (checked by the type).
        let retyped: Publishers.SetFailureType<DemandProbe<Int, Never>, any Error> = publisher.setFailureType(to: (any Error).self)
        #expect(retyped.upstream === probe)
    }

    @Test func keyPathMapsReadTheFields() {
        let probe = DemandProbe<Point, TestError>()
        let one = RecordingSubscriber<Int, TestError>(initialDemand: .max(1))
        // A key-path literal picks the key-path overload (MapKeyPath), as in Combine.
        let mapped: Publishers.MapKeyPath<DemandProbe<Point, TestError>, Int> = probe.map(\.x)
        mapped.subscribe(one)
        probe.send(Point(x: 1, y: 2, label: "a"))
        #expect(one.events == [.subscription, .value(1)])
        #expect(probe.requests == [.max(1)])

        let points = [Point(x: 1, y: 2, label: "a"), Point(x: 3, y: 4, label: "b")]
        let pair: Publishers.MapKeyPath2<Publishers.Sequence<[Point], Never>, Int, Int> = points.publisher.map(\.x, \.y)
        let two = pair.map { "\($0),\($1)" }.record()
        #expect(two.values == ["1,2", "3,4"])
        let three = points.publisher.map(\.x, \.y, \.label).map { "\($0),\($1),\($2)" }.record()
        #expect(three.values == ["1,2,a", "3,4,b"])
        #expect(three.isCompleted)
    }
}
