import HubPipeline
import HubEngine
import HubValue
import HubWire
import HubTesting

/// A Swift sequence that counts how many elements were pulled from it.
final class PipelineCounter {
    var produced = 0
}

struct PipelineCountingSequence: Sequence, IteratorProtocol {
    let counter: PipelineCounter
    let limit: Int
    var index = 0

    mutating func next() -> Value? {
        guard index < limit else { return nil }
        defer { index += 1 }
        counter.produced += 1
        return .int(Int64(index))
    }
}

/// The test environment of pipeline tests: named subjects, a cold counting
/// source `numbers` (0..<1000), a demand probe `probe`, trigger subjects, and a TestScheduler.
final class PipelineTestEnvironment: PipelineEnvironment {
    var subjects: [String: PassthroughSubject<Value, HubError>] = [:]
    /// Every activation of each trigger (for `trigger(name)`), emitting the key or null.
    var triggers: [String: PassthroughSubject<Value, HubError>] = [:]
    /// The keyed signals of each trigger (for `trigger(name, key)`).
    var keyedTriggers: [String: Trigger] = [:]
    let counter = PipelineCounter()
    let probe = DemandProbe<Value, HubError>()
    let testScheduler = TestScheduler()
    var limits = PipelineLimits()
    /// Names asked for, in order.
    var requestedNames: [String] = []
    /// Where a checkpointed pipeline's stages keep their state (`nil`: not checkpointed).
    var checkpoints: CheckpointRegistry?

    init(subjects names: [String] = ["orders", "prices", "a", "b", "c", "medias.x", "medias.y", "signal"]) {
        for name in names { subjects[name] = PassthroughSubject() }
    }

    subscript(_ name: String) -> PassthroughSubject<Value, HubError> { subjects[name]! }

    func source(named name: String) throws(HubError) -> AnyPublisher<Value, HubError> {
        requestedNames.append(name)
        if name == "numbers" {
            return Publishers.Sequence<PipelineCountingSequence, HubError>(
                sequence: PipelineCountingSequence(counter: counter, limit: 1000)).eraseToAnyPublisher()
        }
        if name == "probe" { return probe.eraseToAnyPublisher() }
        guard let subject = subjects[name] else { throw HubError(.notFound, "no subject '\(name)'") }
        return subject.eraseToAnyPublisher()
    }

    func trigger(named name: String, key: Value?) throws(HubError) -> AnyPublisher<Value, HubError> {
        guard let key else {
            let subject = triggers[name] ?? PassthroughSubject()
            triggers[name] = subject
            return subject.eraseToAnyPublisher()
        }
        let trigger = keyedTriggers[name] ?? Trigger()
        keyedTriggers[name] = trigger
        return trigger.signal(activatedBy: key).map { key }.setFailureType(to: HubError.self).eraseToAnyPublisher()
    }

    /// Activates trigger `name` with `key` (null when none).
    func activate(_ name: String, key: Value = .null) {
        triggers[name]?.send(key)
        keyedTriggers[name]?.activate(for: key)
    }

    var scheduler: any Scheduler { testScheduler }

    /// Compiles `source` here.
    func compile(_ source: String) throws(HubError) -> AnyPublisher<Value, HubError> {
        try PipelineCompiler.compile(source, environment: self)
    }

    /// Compiles and subscribes a recorder with `demand`.
    func run(_ source: String, demand: Subscribers.Demand = .unlimited) throws -> RecordingSubscriber<Value, HubError> {
        try compile(source).record(initialDemand: demand)
    }
}

/// The HubError a throwing call threw, if any.
func pipelineError(_ body: () throws -> Void) -> HubError? {
    do {
        try body()
        return nil
    } catch let error as HubError {
        return error
    } catch {
        return HubError(.internal, "unexpected error \(error)")
    }
}

/// An evaluation failure's message, as an Error for `Result`.
struct PipelineEvalMessage: Error, Equatable, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// The expression of `map(text)`, for evaluator tests.
func pipelineExpression(_ text: String) throws(HubError) -> ExpressionSyntax {
    let syntax = try PipelineCompiler.parse("x | map(\(text))")
    guard case let .expression(e) = syntax.stages[1].arguments![0].kind else {
        throw HubError(.internal, "not an expression")
    }
    return e
}

/// Evaluates `text` with `.` = `current`; the failure message on error.
func pipelineEvaluate(_ text: String, _ current: Value = .null, acc: Value? = nil) -> Result<Value, PipelineEvalMessage> {
    do {
        let e = try pipelineExpression(text)
        return .success(try ExpressionEvaluator.evaluate(e, current: current, accumulator: acc))
    } catch let error as HubError {
        return .failure(PipelineEvalMessage("parse: " + error.message))
    } catch let error as ExpressionEvaluator.Failure {
        return .failure(PipelineEvalMessage(error.message))
    } catch {
        return .failure(PipelineEvalMessage("\(error)"))
    }
}
