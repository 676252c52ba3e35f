import HubEngine
import HubValue
import HubWire
import HubTesting
import Testing

/// The demand rule over composed pipelines: a compiled pipeline pulls from a cold
/// source exactly what the same chain written with the engine's operators pulls,
/// and delivers the same values, for random chains and random demand scripts.
@Suite("Pipeline demand")
struct PipelineDemandTests {
    /// One operator as pipeline text and as the engine chain it stands for.
    private struct Step {
        let text: String
        /// Whether its output is no longer integers (so it can only end a chain).
        var ends = false
        let apply: (AnyPublisher<Value, HubError>) -> AnyPublisher<Value, HubError>
    }

    private static func int(_ v: Value) -> Int64 { v.intValue ?? 0 }

    private static var steps: [Step] { [
        Step(text: "map(. + 1)") { $0.map { .int(int($0) + 1) }.eraseToAnyPublisher() },
        Step(text: "map(. * 3)") { $0.map { .int(int($0) * 3) }.eraseToAnyPublisher() },
        Step(text: "filter(. % 2 == 0)") { $0.filter { int($0) % 2 == 0 }.eraseToAnyPublisher() },
        Step(text: "compactMap(. % 3 == 0 ? null : .)") {
            $0.compactMap { v -> Value? in int(v) % 3 == 0 ? Optional<Value>.none : v }.eraseToAnyPublisher()
        },
        Step(text: "scan(0, $acc + .)") { $0.scan(Value.int(0)) { .int(int($0) + int($1)) }.eraseToAnyPublisher() },
        Step(text: "map(. / 4)", ends: true) { $0.map { v -> Value in int(v) % 4 == 0 ? .int(int(v) / 4) : .double(Double(int(v)) / 4) }.eraseToAnyPublisher() },
        Step(text: "removeDuplicates()") { $0.removeDuplicates().eraseToAnyPublisher() },
        Step(text: "prefix(40)") { $0.prefix(40).eraseToAnyPublisher() },
        Step(text: "drop(3)") { $0.dropFirst(3).eraseToAnyPublisher() },
        Step(text: "prefix(while: . < 500)") { $0.prefix(while: { ($0.doubleValue ?? 0) < 500 }).eraseToAnyPublisher() },
        Step(text: "drop(while: . < 7)") { $0.drop(while: { ($0.doubleValue ?? 0) < 7 }).eraseToAnyPublisher() },
        Step(text: "output(at: 5)") { $0.output(at: 5).eraseToAnyPublisher() },
        Step(text: "collect(3)", ends: true) { $0.collect(3).map { Value.array($0) }.eraseToAnyPublisher() },
        Step(text: "prepend(-1)") { $0.prepend(Publishers.Sequence<[Value], HubError>(sequence: [-1])).eraseToAnyPublisher() },
        Step(text: "replaceError(0)") { $0.replaceError(with: 0).setFailureType(to: HubError.self).eraseToAnyPublisher() },
    ] }

    @Test(arguments: 0..<40)
    func compiledChainsPullWhatTheEngineChainPulls(seed: Int) throws {
        var rng = SeededGenerator(seed: UInt64(seed) &+ 500)
        let steps = Self.steps
        var chain: [Step] = []
        for _ in 0..<Int.random(in: 1...5, using: &rng) {
            let step = steps[Int.random(in: 0..<steps.count, using: &rng)]
            chain.append(step)
            if step.ends { break }
        }
        let text = (["numbers"] + chain.map(\.text)).joined(separator: " | ")

        let env = PipelineTestEnvironment()
        let compiled = RecordingSubscriber<Value, HubError>()
        try env.compile(text).subscribe(compiled)

        let counter = PipelineCounter()
        var direct = Publishers.Sequence<PipelineCountingSequence, HubError>(
            sequence: PipelineCountingSequence(counter: counter, limit: 1000)).eraseToAnyPublisher()
        for step in chain { direct = step.apply(direct) }
        let reference = RecordingSubscriber<Value, HubError>()
        direct.subscribe(reference)

        for _ in 0..<4 {
            let demand = Subscribers.Demand.max(Int.random(in: 1...6, using: &rng))
            compiled.request(demand)
            reference.request(demand)
            #expect(compiled.events == reference.events, "\(text)")
            #expect(env.counter.produced == counter.produced, "\(text)")
        }
        // Nothing is pulled beyond the demand: a chain that only maps pulls at most one ahead.
        if chain.allSatisfy({ $0.text.hasPrefix("map") }) {
            #expect(env.counter.produced <= compiled.values.count + 1, "\(text)")
        }
        compiled.cancel()
        reference.cancel()
        #expect(env.counter.produced == counter.produced, "\(text)")
    }

    /// Rule 6 of PROTOCOL.md §5 in virtual time: a timer's tick that comes without demand
    /// is skipped (never delivered later), and the next tick carries its own number.
    @Test func aTimerTicksOnlyWithDemand() throws {
        let env = PipelineTestEnvironment()
        let recorder = try env.run("timer(10ms)", demand: .max(2))
        env.testScheduler.advance(by: .milliseconds(100))
        #expect(recorder.values == [0, 1], "ten ticks, two delivered")
        recorder.request(.max(1))
        #expect(recorder.values == [0, 1], "nothing held back is delivered on the request")
        env.testScheduler.advance(by: .milliseconds(10))
        #expect(recorder.values == [0, 1, 10])
        env.testScheduler.advance(by: .milliseconds(50))
        #expect(recorder.values == [0, 1, 10])
    }
}
