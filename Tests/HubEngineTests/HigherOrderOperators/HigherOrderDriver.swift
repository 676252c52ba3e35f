import HubEngine
import HubTesting
import OpenCombine

// Drivers for differential tests of higher-order operators: the script controls not only the
// upstream subject but also the inner publishers (FlatMap, SwitchToLatest), the publishers a
// resubscription or a catch creates (Retry, Catch), and several subscribers (Share, Multicast).

// MARK: - Outer subject plus scripted inner subjects

/// One step of a script for operators whose upstream emits publishers.
enum NestedStep: Equatable, DifferentialStep {
    /// The outer subject emits the next inner publisher (inner number = how many were emitted before).
    case outerNext
    case outerFinish
    case outerFail
    /// Inner number `inner` sends `value`.
    case innerSend(inner: Int, value: Int)
    case innerFinish(Int)
    /// Inner number `n` fails with `TestError.other(n)`.
    case innerFail(Int)
    /// The downstream requests more (`nil`: unlimited). Never zero.
    case request(Int?)
    case cancel

    var downstream: DownstreamAction? {
        switch self {
        case .request(let n): return .request(n)
        case .cancel: return .cancel
        default: return nil
        }
    }

    var description: String {
        switch self {
        case .outerNext: return "outerNext"
        case .outerFinish: return "outerFinish"
        case .outerFail: return "outerFail"
        case .innerSend(let inner, let value): return "inner\(inner).send(\(value))"
        case .innerFinish(let inner): return "inner\(inner).finish"
        case .innerFail(let inner): return "inner\(inner).fail"
        case .request(let n): return "request(\(n.map(String.init) ?? "unlimited"))"
        case .cancel: return "cancel"
        }
    }
}

enum NestedDifferential {
    /// How many inners one side has emitted (shared with that side's re-entrant hook).
    final class Counter { var emitted = 0 }

    typealias History = [RecordedEvent<Int, TestError>]
    typealias HubSubject = HubEngine.PassthroughSubject<Int, TestError>
    typealias OCSubject = OpenCombine.PassthroughSubject<Int, TestError>

    /// Runs `script` on both engines. The outer subject emits inner numbers (0, 1, 2, …);
    /// the chain builders map a number to `inners[number]`, a subject the script drives.
    static func run<HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(
        _ script: [NestedStep],
        innerCount: Int,
        initialDemand: Int? = 0,
        demandPerValue: Int = 0,
        reentrant: Bool = false,
        hub: (_ outer: HubSubject, _ inners: [HubSubject]) -> HP,
        oc: (_ outer: OCSubject, _ inners: [OCSubject]) -> OP
    ) -> (hub: History, oc: History)
    where HP.Output == Int, HP.Failure == TestError, OP.Output == Int, OP.Failure == TestError {
        let hubOuter = HubSubject()
        let hubInners = (0..<innerCount).map { _ in HubSubject() }
        let hubCounter = Counter()
        let ocOuter = OCSubject()
        let ocInners = (0..<innerCount).map { _ in OCSubject() }
        let ocCounter = Counter()
        let run = DifferentialRun<Int, TestError>(initialDemand: initialDemand, demandPerValue: demandPerValue)
        let (hubRecorder, ocRecorder) = (run.hub, run.oc)

        if reentrant {
            // From inside `receive(_:)`, by the value's last digit: 3 emits the next inner,
            // 5 requests one more, 7 sends `value + 1` into the newest inner.
            hubRecorder.onValue = { [unowned hubRecorder] value in
                switch value % 10 {
                case 3 where hubCounter.emitted < innerCount:
                    hubCounter.emitted += 1
                    hubOuter.send(hubCounter.emitted - 1)
                case 5: hubRecorder.request(.max(1))
                case 7 where hubCounter.emitted > 0: hubInners[hubCounter.emitted - 1].send(value + 1)
                default: break
                }
                return .max(demandPerValue)
            }
            ocRecorder.onValue = { [unowned ocRecorder] value in
                switch value % 10 {
                case 3 where ocCounter.emitted < innerCount:
                    ocCounter.emitted += 1
                    ocOuter.send(ocCounter.emitted - 1)
                case 5: ocRecorder.request(.max(1))
                case 7 where ocCounter.emitted > 0: ocInners[ocCounter.emitted - 1].send(value + 1)
                default: break
                }
                return .max(demandPerValue)
            }
        }
        run.attach(hub: hub(hubOuter, hubInners), oc: oc(ocOuter, ocInners))

        for step in script {
            if let action = step.downstream {
                run.play(action)
                continue
            }
            switch step {
            case .outerNext:
                // Both sides emit the same next inner, whatever their hooks did.
                let next = max(hubCounter.emitted, ocCounter.emitted)
                guard next < innerCount else { continue }
                hubCounter.emitted = next + 1
                ocCounter.emitted = next + 1
                hubOuter.send(next)
                ocOuter.send(next)
            case .outerFinish:
                hubOuter.send(completion: .finished)
                ocOuter.send(completion: .finished)
            case .outerFail:
                hubOuter.send(completion: .failure(.oops))
                ocOuter.send(completion: .failure(.oops))
            case .innerSend(let inner, let value):
                hubInners[inner].send(value)
                ocInners[inner].send(value)
            case .innerFinish(let inner):
                hubInners[inner].send(completion: .finished)
                ocInners[inner].send(completion: .finished)
            case .innerFail(let inner):
                hubInners[inner].send(completion: .failure(.other(inner)))
                ocInners[inner].send(completion: .failure(.other(inner)))
            case .request, .cancel:
                break
            }
        }
        return run.histories
    }

    /// A random valid script that emits at most `innerCount` inners and drives them. Inner values
    /// are `100 * inner + k`, so that a history shows which inner each value came from.
    static func randomScript<G: RandomNumberGenerator>(
        length: Int, innerCount: Int, failures: Bool = true, using generator: inout G
    ) -> [NestedStep] {
        var steps: [NestedStep] = []
        var emitted = 0
        for _ in 0..<length {
            let roll = Int.random(in: 0..<100, using: &generator)
            // Inner events mostly go to one of the three newest inners.
            let inner = emitted == 0 ? 0 : Int.random(in: max(0, emitted - 3)..<emitted, using: &generator)
            switch roll {
            case 0..<18 where emitted < innerCount:
                steps.append(.outerNext)
                emitted += 1
            case 18..<52 where emitted > 0:
                steps.append(.innerSend(inner: inner, value: 100 * inner + Int.random(in: 0...99, using: &generator)))
            case 52..<60 where emitted > 0:
                steps.append(.innerFinish(inner))
            case 60..<63 where emitted > 0 && failures:
                steps.append(.innerFail(inner))
            case 85..<88:
                steps.append(.cancel)
            case 88..<94:
                steps.append(.outerFinish)
            case 94..<97 where failures:
                steps.append(.outerFail)
            default:
                steps.append(.request(Int.random(in: 0..<8, using: &generator) == 0 ? nil : Int.random(in: 1...3, using: &generator)))
            }
        }
        return steps
    }
}

// MARK: - A source that gives each subscription a fresh subject

/// A HubEngine publisher that, for each subscriber, makes a new subject and subscribes the
/// subscriber to it; the script drives the newest subject. Retry and Catch resubscribe to it.
final class HubFreshSubjects: HubEngine.Publisher {
    typealias Output = Int
    typealias Failure = TestError
    private(set) var subjects: [HubEngine.PassthroughSubject<Int, TestError>] = []

    var newest: HubEngine.PassthroughSubject<Int, TestError>? { subjects.last }

    func receive<S: HubEngine.Subscriber>(subscriber: S) where S.Input == Int, S.Failure == TestError {
        let subject = HubEngine.PassthroughSubject<Int, TestError>()
        subjects.append(subject)
        subject.subscribe(subscriber)
    }
}

/// The OpenCombine twin of ``HubFreshSubjects``.
final class OCFreshSubjects: OpenCombine.Publisher {
    typealias Output = Int
    typealias Failure = TestError
    private(set) var subjects: [OpenCombine.PassthroughSubject<Int, TestError>] = []

    var newest: OpenCombine.PassthroughSubject<Int, TestError>? { subjects.last }

    func receive<S: OpenCombine.Subscriber>(subscriber: S) where S.Input == Int, S.Failure == TestError {
        let subject = OpenCombine.PassthroughSubject<Int, TestError>()
        subjects.append(subject)
        subject.subscribe(subscriber)
    }
}

enum FreshDifferential {
    typealias History = [RecordedEvent<Int, TestError>]

    /// Runs `script` on both engines; sends, finishes and failures go to the newest subject of the
    /// source. Also returns how many subscriptions each source saw.
    static func run<HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(
        _ script: [ScriptStep<Int>],
        initialDemand: Int? = 0,
        demandPerValue: Int = 0,
        hub: (HubFreshSubjects) -> HP,
        oc: (OCFreshSubjects) -> OP
    ) -> (hub: History, oc: History, hubSubscriptions: Int, ocSubscriptions: Int)
    where HP.Output == Int, HP.Failure == TestError, OP.Output == Int, OP.Failure == TestError {
        let hubSource = HubFreshSubjects()
        let ocSource = OCFreshSubjects()
        let histories: (hub: History, oc: History) = Differential.run(
            script, initialDemand: initialDemand, demandPerValue: demandPerValue,
            hubSources: hubSource, ocSources: ocSource, hub: hub, oc: oc,
            play: { step, hub, oc in Differential.playSource(step, hubSubject: hub.newest, ocSubject: oc.newest) })
        return (histories.hub, histories.oc, hubSource.subjects.count, ocSource.subjects.count)
    }
}

// MARK: - Several subscribers to one shared publisher

/// One step of a script for multicasting operators.
enum SharedStep: Equatable, CustomStringConvertible {
    /// A new subscriber attaches with this initial demand (`nil`: unlimited, 0: none).
    case subscribe(Int?)
    /// Subscriber number `subscriber` requests more. Never zero.
    case request(subscriber: Int, Int?)
    /// Subscriber number `n` cancels (each subscriber at most once).
    case cancel(Int)
    case send(Int)
    case finish
    case fail
    /// `connect()` on a connectable publisher (the connection is kept).
    case connect
    /// Cancels the newest connection.
    case disconnect

    var description: String {
        switch self {
        case .subscribe(let n): return "subscribe(\(n.map(String.init) ?? "unlimited"))"
        case .request(let s, let n): return "sub\(s).request(\(n.map(String.init) ?? "unlimited"))"
        case .cancel(let s): return "sub\(s).cancel"
        case .send(let v): return "send(\(v))"
        case .finish: return "finish"
        case .fail: return "fail"
        case .connect: return "connect"
        case .disconnect: return "disconnect"
        }
    }
}

enum SharedDifferential {
    typealias History = [RecordedEvent<Int, TestError>]

    /// Runs `script` on both engines, with the chain built once over each engine's source, which
    /// makes a fresh subject per connection (sends go to the newest, so a disconnection shows);
    /// returns each subscriber's history in order of subscription and the connection counts.
    static func run<HP: HubEngine.Publisher, OP: OpenCombine.Publisher>(
        _ script: [SharedStep],
        demandPerValue: Int = 0,
        hub: (HubFreshSubjects) -> HP,
        hubConnect: (HP) -> any HubEngine.Cancellable = { _ in HubEngine.AnyCancellable {} },
        oc: (OCFreshSubjects) -> OP,
        ocConnect: (OP) -> any OpenCombine.Cancellable = { _ in OpenCombine.AnyCancellable {} }
    ) -> (hub: [History], oc: [History], hubSubscriptions: Int, ocSubscriptions: Int)
    where HP.Output == Int, HP.Failure == TestError, OP.Output == Int, OP.Failure == TestError {
        let hubSource = HubFreshSubjects()
        let hubShared = hub(hubSource)
        var runs: [DifferentialRun<Int, TestError>] = []
        var hubConnections: [any HubEngine.Cancellable] = []
        let ocSource = OCFreshSubjects()
        let ocShared = oc(ocSource)
        var ocConnections: [any OpenCombine.Cancellable] = []

        for step in script {
            switch step {
            case .subscribe(let n):
                // One more subscriber on each side: one more run of the harness.
                let run = DifferentialRun<Int, TestError>(initialDemand: n, demandPerValue: demandPerValue)
                runs.append(run)
                run.attach(hub: hubShared, oc: ocShared)
            case .request(let subscriber, let n):
                runs[subscriber].play(.request(n))
            case .cancel(let subscriber):
                runs[subscriber].play(.cancel)
            case .send(let v):
                hubSource.newest?.send(v)
                ocSource.newest?.send(v)
            case .finish:
                hubSource.newest?.send(completion: .finished)
                ocSource.newest?.send(completion: .finished)
            case .fail:
                hubSource.newest?.send(completion: .failure(.oops))
                ocSource.newest?.send(completion: .failure(.oops))
            case .connect:
                hubConnections.append(hubConnect(hubShared))
                ocConnections.append(ocConnect(ocShared))
            case .disconnect:
                hubConnections.popLast()?.cancel()
                ocConnections.popLast()?.cancel()
            }
        }
        return (runs.map(\.hub.events), runs.map(\.oc.events), hubSource.subjects.count, ocSource.subjects.count)
    }

    /// A random valid script: each subscriber cancels at most once; `connections` adds connect
    /// and disconnect steps (for a plain multicast).
    static func randomScript<G: RandomNumberGenerator>(
        length: Int, connections: Bool, using generator: inout G
    ) -> [SharedStep] {
        var steps: [SharedStep] = []
        var subscribers = 0
        var live: [Int] = []
        var connected = 0
        for _ in 0..<length {
            let roll = Int.random(in: 0..<100, using: &generator)
            switch roll {
            case 0..<15 where subscribers < 5:
                let initial = [0, 0, 1, 2, nil].randomElement(using: &generator)!
                steps.append(.subscribe(initial))
                live.append(subscribers)
                subscribers += 1
            case 15..<40 where subscribers > 0:
                let n = Int.random(in: 0..<8, using: &generator) == 0 ? nil : Int.random(in: 1...3, using: &generator)
                steps.append(.request(subscriber: Int.random(in: 0..<subscribers, using: &generator), n))
            case 40..<46 where !live.isEmpty:
                let index = Int.random(in: 0..<live.count, using: &generator)
                steps.append(.cancel(live.remove(at: index)))
            case 46..<54 where connections:
                steps.append(.connect)
                connected += 1
            case 54..<58 where connections && connected > 0:
                steps.append(.disconnect)
                connected -= 1
            case 58..<61:
                steps.append(.finish)
            case 61..<63:
                steps.append(.fail)
            default:
                steps.append(.send(Int.random(in: 0...99, using: &generator)))
            }
        }
        return steps
    }
}

// MARK: - Error casting for try-operators

/// Forwards a HubEngine chain whose failure is `any Error` to a recorder of `TestError`s
/// (an error that is not a `TestError` is recorded as `.other(-1)`).
struct HubErrorCast<Downstream: HubEngine.Subscriber>: HubEngine.Subscriber
where Downstream.Input == Int, Downstream.Failure == TestError {
    typealias Input = Int
    typealias Failure = any Error
    let downstream: Downstream
    let combineIdentifier = HubEngine.CombineIdentifier()
    func receive(subscription: any HubEngine.Subscription) { downstream.receive(subscription: subscription) }
    func receive(_ input: Int) -> HubEngine.Subscribers.Demand { downstream.receive(input) }
    func receive(completion: HubEngine.Subscribers.Completion<any Error>) {
        switch completion {
        case .finished: downstream.receive(completion: .finished)
        case .failure(let error): downstream.receive(completion: .failure(TestError.recorded(error)))
        }
    }
}

/// The OpenCombine twin of ``HubErrorCast``.
struct OCErrorCast<Downstream: OpenCombine.Subscriber>: OpenCombine.Subscriber
where Downstream.Input == Int, Downstream.Failure == TestError {
    typealias Input = Int
    typealias Failure = any Error
    let downstream: Downstream
    let combineIdentifier = OpenCombine.CombineIdentifier()
    func receive(subscription: any OpenCombine.Subscription) { downstream.receive(subscription: subscription) }
    func receive(_ input: Int) -> OpenCombine.Subscribers.Demand { downstream.receive(input) }
    func receive(completion: OpenCombine.Subscribers.Completion<any Error>) {
        switch completion {
        case .finished: downstream.receive(completion: .finished)
        case .failure(let error): downstream.receive(completion: .failure(TestError.recorded(error)))
        }
    }
}

/// A HubEngine publisher of `any Error` seen as a publisher of `TestError`, for the drivers above.
struct HubCastingPublisher<Upstream: HubEngine.Publisher>: HubEngine.Publisher
where Upstream.Output == Int, Upstream.Failure == any Error {
    typealias Output = Int
    typealias Failure = TestError
    let upstream: Upstream
    func receive<S: HubEngine.Subscriber>(subscriber: S) where S.Input == Int, S.Failure == TestError {
        upstream.subscribe(HubErrorCast(downstream: subscriber))
    }
}

/// The OpenCombine twin of ``HubCastingPublisher``.
struct OCCastingPublisher<Upstream: OpenCombine.Publisher>: OpenCombine.Publisher
where Upstream.Output == Int, Upstream.Failure == any Error {
    typealias Output = Int
    typealias Failure = TestError
    let upstream: Upstream
    func receive<S: OpenCombine.Subscriber>(subscriber: S) where S.Input == Int, S.Failure == TestError {
        upstream.subscribe(OCErrorCast(downstream: subscriber))
    }
}
