import HubEngine

/// A page of the fake paged source used by the pagination examples.
struct SeedPage: Equatable, CustomStringConvertible {
    let items: [Int]
    let next: Int?
    var description: String { "\(items)->\(next.map(String.init) ?? "end")" }
}

/// A fake paged source: `pageCount` pages of `pageSize` items; page `n` holds
/// `n*pageSize ..< (n+1)*pageSize`. It counts how many pages were fetched.
final class SeedPagedSource {
    let pageCount: Int
    let pageSize: Int
    private(set) var fetches: [Int] = []

    init(pageCount: Int, pageSize: Int = 2) {
        self.pageCount = pageCount
        self.pageSize = pageSize
    }

    /// The publisher of one page (the article's `itemsPublisher(at:)`): a `Just`.
    func page(_ page: Int) -> Just<SeedPage> {
        fetches.append(page)
        let items = Array(page * pageSize ..< (page + 1) * pageSize)
        return Just(SeedPage(items: items, next: page + 1 < pageCount ? page + 1 : nil))
    }

    /// The article's `itemsPublisher(at:paginatedBy:)`: the page, then, if there is a next page and a
    /// paginator, the next pages, each held back by `wait(untilOutputFrom: paginator)`.
    func pages(at page: Int = 0, paginatedBy paginator: Trigger.Signal?) -> AnyPublisher<SeedPage, Never> {
        // The pages are fetched lazily: `Deferred` does not exist yet, so `SeedThen` makes the next
        // publisher only once the current one has finished.
        SeedThen(first: SeedLazyPublisher { self.page(page).eraseToAnyPublisher() }) { result in
            guard let paginator, let next = result.next else { return nil }
            return self.pages(at: next, paginatedBy: paginator).wait(untilOutputFrom: paginator).eraseToAnyPublisher()
        }
        .eraseToAnyPublisher()
    }
}

/// A publisher made when subscribed (a minimal `Deferred` for the tests).
struct SeedLazyPublisher<P: Publisher>: Publisher {
    typealias Output = P.Output
    typealias Failure = P.Failure
    let make: () -> P
    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        make().subscribe(subscriber)
    }
}

/// Test helper standing in for the article's `map { ... }.switchToLatest()` + `prepend`: emits
/// `first`'s values, then, when `first` finishes, subscribes to `rest(lastValue)` (if any) with
/// the outstanding demand. Demand is forwarded as requested; cancel reaches the running part.
struct SeedThen<Output, Failure: Error>: Publisher {
    let first: AnyPublisher<Output, Failure>
    let rest: (Output) -> AnyPublisher<Output, Failure>?

    init<P: Publisher>(first: P, rest: @escaping (Output) -> AnyPublisher<Output, Failure>?)
    where P.Output == Output, P.Failure == Failure {
        self.first = first.eraseToAnyPublisher()
        self.rest = rest
    }

    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        let link = Link(downstream: AnySubscriber(subscriber), rest: rest)
        subscriber.receive(subscription: link)
        first.subscribe(Side(link: link))
    }

    private final class Link: Subscription {
        var downstream: AnySubscriber<Output, Failure>?
        let rest: (Output) -> AnyPublisher<Output, Failure>?
        var upstream: (any Subscription)?
        var demand = Subscribers.Demand.none
        var last: Output?
        var second = false

        init(downstream: AnySubscriber<Output, Failure>, rest: @escaping (Output) -> AnyPublisher<Output, Failure>?) {
            self.downstream = downstream
            self.rest = rest
        }

        func request(_ demand: Subscribers.Demand) {
            guard demand > 0, downstream != nil else { return }
            self.demand += demand
            upstream?.request(demand)
        }

        func cancel() {
            downstream = nil
            upstream.take()?.cancel()
        }

        func subscribed(_ subscription: any Subscription) {
            guard downstream != nil else { subscription.cancel(); return }
            upstream = subscription
            if demand > 0 { subscription.request(demand) }
        }

        func value(_ value: Output) -> Subscribers.Demand {
            guard let downstream else { return .none }
            if !second { last = value }
            demand -= 1
            let more = downstream.receive(value)
            demand += more
            return more
        }

        func completed(_ completion: Subscribers.Completion<Failure>) {
            guard let downstream else { return }
            upstream = nil
            if case .finished = completion, !second, let last, let next = rest(last) {
                second = true
                next.subscribe(Side(link: self))
                return
            }
            self.downstream = nil
            downstream.receive(completion: completion)
        }
    }

    private struct Side: Subscriber {
        typealias Input = Output
        let link: Link
        let combineIdentifier = CombineIdentifier()
        func receive(subscription: any Subscription) { link.subscribed(subscription) }
        func receive(_ input: Output) -> Subscribers.Demand { link.value(input) }
        func receive(completion: Subscribers.Completion<Failure>) { link.completed(completion) }
    }
}

/// One step of a two-source script: an upstream subject and a signal subject.
enum SeedScriptStep: Equatable, DifferentialStep {
    case send(Int)
    case finish
    case fail
    case fire
    case finishSignal
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
        case .send(let v): return "send(\(v))"
        case .finish: return "finish"
        case .fail: return "fail"
        case .fire: return "fire"
        case .finishSignal: return "finishSignal"
        case .request(let n): return "request(\(n.map(String.init) ?? "unlimited"))"
        case .cancel: return "cancel"
        }
    }

    /// A random valid script (requests never zero).
    static func random<G: RandomNumberGenerator>(length: Int, using generator: inout G) -> [SeedScriptStep] {
        (0..<length).map { _ in
            switch Int.random(in: 0..<100, using: &generator) {
            case 0..<40: return .send(Int.random(in: 0...9, using: &generator))
            case 40..<60: return .fire
            case 60..<82: return .request(Int.random(in: 0..<6, using: &generator) == 0 ? nil : Int.random(in: 1...3, using: &generator))
            case 82..<86: return .cancel
            case 86..<91: return .finish
            case 91..<95: return .finishSignal
            default: return .fail
            }
        }
    }
}
