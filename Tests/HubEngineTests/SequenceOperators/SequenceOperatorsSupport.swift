import HubEngine
import OpenCombine
import Testing
import HubTesting

/// A test-only `mapError { $0 as! TestError }` for HubEngine, so that the try-operators
/// (whose failure is `any Error`) can be recorded and compared with OpenCombine.
struct SeqOpsCastFailure<Upstream: HubEngine.Publisher>: HubEngine.Publisher where Upstream.Failure == any Error {
    typealias Output = Upstream.Output
    typealias Failure = TestError

    let upstream: Upstream

    func receive<S: HubEngine.Subscriber>(subscriber: S) where S.Input == Output, S.Failure == TestError {
        upstream.subscribe(Inner(downstream: subscriber))
    }

    private struct Inner<D: HubEngine.Subscriber>: HubEngine.Subscriber where D.Input == Output, D.Failure == TestError {
        typealias Input = Output
        typealias Failure = any Error
        let downstream: D
        let combineIdentifier = HubEngine.CombineIdentifier()
        func receive(subscription: any HubEngine.Subscription) { downstream.receive(subscription: subscription) }
        func receive(_ input: Input) -> HubEngine.Subscribers.Demand { downstream.receive(input) }
        func receive(completion: HubEngine.Subscribers.Completion<any Error>) {
            downstream.receive(completion: completion.mapError { $0 as! TestError })
        }
    }
}

extension HubEngine.Publisher where Failure == any Error {
    /// Casts the failure back to ``TestError`` (the tests' predicates only throw that).
    func castToTestError() -> SeqOpsCastFailure<Self> { SeqOpsCastFailure(upstream: self) }
}

/// Predicates shared by the tests: `small` throws `TestError.other(7)` on 7.
enum SeqOpsPredicates {
    static func small(_ value: Int) throws -> Bool {
        if value == 7 { throw TestError.other(7) }
        return value < 5
    }
}

/// Runs random differential scripts with HubEngine's stricter cancellation rule in mind.
enum SeqOpsDifferential {
    /// Runs a random script (from `seed`) on both engines and expects the same history.
    ///
    /// OpenCombine sometimes still delivers after a downstream `cancel()` (e.g. a `first()`
    /// result that was waiting for demand); HubEngine never does. So HubEngine's history for the
    /// whole script is compared with OpenCombine's history for the script cut just after its
    /// first `cancel`, and HubEngine must not change its history after that cancel either.
    static func check<Out: Equatable, HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(
        seed: Int,
        length: Int = 16,
        hub: (HubEngine.PassthroughSubject<Int, TestError>) -> HP,
        oc: (OpenCombine.PassthroughSubject<Int, TestError>) -> OP,
        sourceLocation: SourceLocation = #_sourceLocation
    ) where HP.Output == Out, HP.Failure == TestError, OP.Output == Out, OP.Failure == TestError {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = Differential.randomScript(length: length, using: &generator)
        let initial = [0, 1, 2, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...1, using: &generator)
        let full = Differential.run(script, initialDemand: initial, demandPerValue: perValue, hub: hub, oc: oc)
        let cut = script.firstIndex(of: .cancel).map { Array(script[...$0]) } ?? script
        let truncated = Differential.run(cut, initialDemand: initial, demandPerValue: perValue, hub: hub, oc: oc)
        #expect(full.hub == truncated.oc,
                "seed \(seed), initial \(String(describing: initial)), perValue \(perValue): \(script)",
                sourceLocation: sourceLocation)
        #expect(full.hub == truncated.hub, "seed \(seed): HubEngine delivered after cancel", sourceLocation: sourceLocation)
    }
}
