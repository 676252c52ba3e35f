import HubPipeline
import HubEngine
import HubValue
import HubWire
import HubTesting
import Testing

/// An environment that creates a subject for any name (as a hub that auto-creates names does).
private final class AutoCreatingEnvironment: PipelineEnvironment {
    var subjects: [String: PassthroughSubject<Value, HubError>] = [:]
    let testScheduler = TestScheduler()
    var limits = PipelineLimits()

    func subject(_ name: String) -> PassthroughSubject<Value, HubError> {
        if let s = subjects[name] { return s }
        let s = PassthroughSubject<Value, HubError>()
        subjects[name] = s
        return s
    }

    func source(named name: String) throws(HubError) -> AnyPublisher<Value, HubError> {
        subject(name).eraseToAnyPublisher()
    }

    func trigger(named name: String, key: Value?) throws(HubError) -> AnyPublisher<Value, HubError> {
        subject("trigger:" + name).eraseToAnyPublisher()
    }

    var scheduler: any Scheduler { testScheduler }
}

/// Random valid pipeline text.
private struct PipelineGenerator {
    var rng: SeededGenerator

    mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &rng)] }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }

    mutating func literal() -> String {
        pick(["0", "1", "-3", "2.5", "\"a\"", "\"b\\n\"", "null", "true", "false", "[]", "{}", "9223372036854775807"])
    }

    mutating func expression(_ depth: Int, acc: Bool = false) -> String {
        if depth <= 0 || chance(0.3) {
            var leaves = [".", ".a", ".b.c", ".[0]", ".a[1].b", literal()]
            if acc { leaves.append("$acc") }
            return pick(leaves)
        }
        let d = depth - 1
        switch Int.random(in: 0..<9, using: &rng) {
        case 0: return "\(expression(d, acc: acc)) \(pick(["+", "-", "*", "/", "%"])) \(expression(d, acc: acc))"
        case 1: return "\(expression(d, acc: acc)) \(pick(["==", "!=", "<", "<=", ">", ">="])) \(expression(d, acc: acc))"
        case 2: return "\(expression(d, acc: acc)) \(pick(["and", "or"])) \(expression(d, acc: acc))"
        case 3: return "(not \(expression(d, acc: acc)))"
        case 4: return "\(expression(d, acc: acc)) ? \(expression(d, acc: acc)) : \(expression(d, acc: acc))"
        case 5: return "[\(expression(d, acc: acc)), \(expression(d, acc: acc))]"
        case 6: return "{k: \(expression(d, acc: acc)), \"q k\": \(expression(d, acc: acc))}"
        case 7: return "(\(expression(d, acc: acc)))"
        default:
            return pick([
                "length(\(expression(d, acc: acc)))", "string(\(expression(d, acc: acc)))",
                "abs(\(expression(d, acc: acc)))", "max(\(expression(d, acc: acc)), 1)",
                "map([1, 2], x -> x + \(expression(d, acc: acc)))", "-\(expression(d, acc: acc))",
            ])
        }
    }

    mutating func source(_ depth: Int) -> String {
        if depth <= 0 || chance(0.6) {
            switch Int.random(in: 0..<9, using: &rng) {
            case 0: return pick(["a", "b", "orders.eu"])
            case 1: return "just(\(literal()))"
            case 2: return "just([\(literal()), {k: \(literal())}][0])"
            case 3: return "sequence([\(literal()), \(literal()), \(literal())])"
            case 4: return "empty()"
            case 5: return "fail(\(literal()))"
            case 6: return "timer(\(pick(["10ms", "1s", "250ms"])))"
            case 7: return "trigger(t)"
            default: return "trigger(\"t\", 1)"
            }
        }
        let name = pick(["merge", "combineLatest", "zip", "accumulateLatest", "reduceLatest", "publishAndRepeat", "publish"])
        let count = ["zip", "merge", "accumulateLatest"].contains(name) ? Int.random(in: 2...3, using: &rng) : 2
        var arguments: [String] = []
        for _ in 0..<count { arguments.append(pipeline(depth - 1)) }
        return "\(name)(\(arguments.joined(separator: ", ")))"
    }

    mutating func operatorStage(_ depth: Int) -> String {
        if depth > 0, chance(0.25) {
            let inner = pipeline(depth - 1)
            return pick([
                "catch(\(inner))", "flatMap(\(inner))", "switchToLatest(\(inner))", "merge(\(inner))", "wait(\(inner))",
                "prefix(untilOutputFrom: \(inner))", "prepend(\(inner))", "zip(\(inner))", "combineLatest(\(inner))",
                "drop(untilOutputFrom: \(inner))", "flatMap(\(inner), maxPublishers: 1)",
            ])
        }
        switch Int.random(in: 0..<12, using: &rng) {
        case 0: return "map(\(expression(3)))"
        case 1: return "filter(\(expression(3)))"
        case 2: return "compactMap(\(expression(2)))"
        case 3: return "scan(\(literal()), \(expression(3, acc: true)))"
        case 4: return "reduce(0, \(expression(2, acc: true)))"
        case 5: return "\(pick(["contains(where: ", "allSatisfy(", "first(where: ", "last(where: ", "prefix(while: ", "drop(while: "]))\(expression(2)))"
        case 6: return "removeDuplicates(by: $prev == \(expression(1)))"
        case 7: return "prefix(\(Int.random(in: 0...4, using: &rng)))"
        case 8: return "collect(\(Int.random(in: 1...3, using: &rng)))"
        case 9: return "prepend(\(literal()), \(literal()))"
        case 10: return "replaceError(\(literal()))"
        default:
            return pick([
                "removeDuplicates()", "drop(1)", "first()", "last()", "debounce(20ms)", "throttle(20ms)", "throttle(20ms, latest)",
                "delay(10ms)", "retry(1)", "append(1)", "contains(1)", "count()", "min()", "max()", "output(at: 1)",
                "dropFirst()", "ignoreOutput()", "replaceEmpty(0)", "measureInterval()", "timeout(50ms)", "buffer(3)",
                "share()", "collect()", "replaceNil(0)", "mapError(.data)", "collect(20ms)", "collect(20ms, 2)",
                "buffer(2, dropNewest)", "output(in: [1, 3])", "timeout(30ms, \"late\")",
            ])
        }
    }

    mutating func pipeline(_ depth: Int) -> String {
        var text = source(depth)
        for _ in 0..<Int.random(in: 0...3, using: &rng) { text += " | " + operatorStage(depth) }
        return text
    }
}

@Suite("Pipeline properties")
struct PipelinePropertyTests {
    /// Subscribes, feeds every subject a few values, runs the scheduler; returns the history.
    private func exercise(_ publisher: AnyPublisher<Value, HubError>, _ env: AutoCreatingEnvironment, rng: inout SeededGenerator)
        -> [RecordedEvent<Value, HubError>]
    {
        let r = publisher.record(initialDemand: .max(Int.random(in: 1...5, using: &rng)), demandPerValue: .max(1))
        for step in 0..<6 {
            for name in env.subjects.keys.sorted() {
                env.subjects[name]?.send([.int(Int64(step)), "x", ["a": .int(Int64(step)), "b": ["c": 1]], .null][step % 4])
            }
            env.testScheduler.advance(by: .milliseconds(15))
        }
        for name in env.subjects.keys.sorted() { env.subjects[name]?.send(completion: .finished) }
        env.testScheduler.advance(by: .milliseconds(100))
        r.cancel()
        return r.events
    }

    private func checkWellFormed(_ events: [RecordedEvent<Value, HubError>], _ text: String) {
        #expect(events.first == .subscription, "\(text)")
        if let terminal = events.firstIndex(where: { $0 == .finished || { if case .failure = $0 { return true }; return false }($0) }) {
            #expect(terminal == events.count - 1, "events after completion for \(text)")
        }
        for case let .failure(error) in events {
            #expect(error.code == .failed || error.code == .overflow, "\(text): \(error)")
        }
    }

    @Test(arguments: 0..<10)
    func randomValidPipelinesCompileAndRun(seed: Int) throws {
        var generator = PipelineGenerator(rng: SeededGenerator(seed: UInt64(seed) &* 7919 &+ 11))
        var rng = SeededGenerator(seed: UInt64(seed))
        for _ in 0..<25 {
            let text = generator.pipeline(2)
            let env = AutoCreatingEnvironment()
            env.limits = PipelineLimits(maxStages: 1000)
            let publisher: AnyPublisher<Value, HubError>
            do {
                publisher = try PipelineCompiler.compile(text, environment: env)
            } catch {
                Issue.record("\(text) did not compile: \(error)")
                continue
            }
            checkWellFormed(exercise(publisher, env, rng: &rng), text)
        }
    }

    @Test func randomTextNeverCrashesTheCompiler() {
        var rng = SeededGenerator(seed: 2026)
        var generator = PipelineGenerator(rng: SeededGenerator(seed: 99))
        let alphabet = Array("abcxyz_.$|(),[]{}:?+-*/%<>=!\"\\ 0123456789msue\n\té") + ["map", "filter", "scan", "$acc", "->", "not", "and", "250ms", "merge", "just", "timer", "flatMap"]
            .flatMap { Array($0) }
        var compiled = 0
        for case_ in 0..<2000 {
            var text: String
            if case_ % 2 == 0 {
                // Pure noise.
                text = String((0..<Int.random(in: 0...40, using: &rng)).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &rng)] })
            } else {
                // A valid pipeline with a few random edits.
                var chars = Array(generator.pipeline(1))
                for _ in 0..<Int.random(in: 1...3, using: &rng) where !chars.isEmpty {
                    let i = Int.random(in: 0..<chars.count, using: &rng)
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0: chars.remove(at: i)
                    case 1: chars.insert(alphabet[Int.random(in: 0..<alphabet.count, using: &rng)], at: i)
                    default: chars[i] = alphabet[Int.random(in: 0..<alphabet.count, using: &rng)]
                    }
                }
                text = String(chars)
            }
            let env = AutoCreatingEnvironment()
            do {
                let publisher = try PipelineCompiler.compile(text, environment: env)
                compiled += 1
                checkWellFormed(exercise(publisher, env, rng: &rng), text)
            } catch {
                #expect(error.code == .pipelineError, "\(text): \(error)")
                let line = error.data?["line"]?.intValue ?? 0
                let column = error.data?["column"]?.intValue ?? 0
                #expect(line >= 1 && column >= 1, "\(text): \(error)")
                #expect(error.message.hasPrefix("\(line):\(column): "), "\(text): \(error)")
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
                #expect(line <= lines.count, "\(text): \(error)")
            }
        }
        // The mutated half keeps some pipelines valid.
        #expect(compiled > 0)
    }
}
