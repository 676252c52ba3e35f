import HubEngine
import HubValue
import HubTransport
import Synchronization

/// The values of a remote subscription as an `AsyncSequence`.
///
/// Each iterator opens its own remote subscription on its first `next()`, with
/// `prefetch` values of demand (the `subscribe`'s `demand`), and keeps at
/// most `prefetch` values requested ahead of the consumer: once half of the
/// window (at least one value) has been consumed by `next()`, it requests that
/// many more. `next()` returns `nil` when the subscription completes and
/// throws the ``HubClientError`` it failed with (then returns `nil`).
///
/// Cancelling the task that waits in `next()`, or dropping the iterator,
/// cancels the remote subscription (`next()` then returns `nil`).
public struct HubValues: AsyncSequence, Sendable {
    /// JSON values.
    public typealias Element = Value
    /// The subscription's failure.
    public typealias Failure = HubClientError

    /// The publisher whose values are iterated.
    public let publisher: HubPublisher
    /// How many values are kept requested ahead of the consumer (≥ 1).
    public let prefetch: Int

    /// The window kept requested when none is given: 65,536 values. The server sends
    /// no more than that, so it bounds what waits in the client's memory; it covers
    /// the round trip of a `request` at high rates (half a window is one request),
    /// and lets a consumer that falls behind for a while take a subject's values off
    /// the server (whose buffer holds 1,000 by default) instead of overflowing there.
    public static let defaultPrefetch = 65_536

    /// The values of `publisher`, `prefetch` (at least 1) kept in flight.
    public init(publisher: HubPublisher, prefetch: Int = HubValues.defaultPrefetch) {
        self.publisher = publisher
        self.prefetch = Swift.max(prefetch, 1)
    }

    /// A new iterator (a new remote subscription on its first `next()`).
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(bridge: ValuesBridge(publisher: publisher, window: prefetch))
    }

    /// Iterates one remote subscription.
    public struct AsyncIterator: AsyncIteratorProtocol {
        /// JSON values.
        public typealias Element = Value
        /// The subscription's failure.
        public typealias Failure = HubClientError

        private let token: Token

        init(bridge: ValuesBridge) {
            token = Token(bridge)
        }

        /// The next value; `nil` at the end (completion, cancellation); throws the
        /// subscription's failure once.
        public mutating func next() async throws(HubClientError) -> Value? {
            try await token.bridge.next().get()
        }

        /// Cancels the subscription when the last copy of the iterator goes away.
        private final class Token: Sendable {
            let bridge: ValuesBridge
            init(_ bridge: ValuesBridge) { self.bridge = bridge }
            deinit { bridge.cancel() }
        }
    }
}

/// The subscriber behind a ``HubValues`` iterator: receives on the loop, hands
/// values to the consumer under a lock, and grants demand as they are consumed.
final class ValuesBridge: Subscriber, @unchecked Sendable {
    typealias Input = Value
    typealias Failure = HubClientError

    private struct State {
        var buffer: [Value] = []
        var head = 0
        var terminal: Subscribers.Completion<HubClientError>?
        var terminalReported = false
        var cancelled = false
        var started = false
        var consumedSinceGrant = 0
        var waiter: CheckedContinuation<Result<Value?, HubClientError>, Never>?
    }

    private let publisher: HubPublisher
    private let window: Int
    private let state = Mutex(State())
    /// The remote subscription; loop thread only.
    private var subscription: (any Subscription)?

    init(publisher: HubPublisher, window: Int) {
        self.publisher = publisher
        self.window = window
    }

    private var eventLoop: EventLoop { publisher.client.eventLoop }

    // MARK: Consumer side

    func next() async -> Result<Value?, HubClientError> {
        let start = state.withLock { state -> Bool in
            if state.started { return false }
            state.started = true
            return true
        }
        if start {
            guard !publisher.client.isClosedNow else {
                return .failure(HubClientError(code: .closed, message: "the client is closed"))
            }
            let publisher = self.publisher
            eventLoop.execute { publisher.receive(subscriber: self) }
        }
        if let ready = poll() { return consumed(ready) }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value?, HubClientError>, Never>) in
                let ready = state.withLock { state -> Result<Value?, HubClientError>? in
                    if let ready = Self.take(&state) { return ready }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            self.cancel()
        }
        return consumed(result)
    }

    private func poll() -> Result<Value?, HubClientError>? {
        state.withLock { state in Self.take(&state) }
    }

    /// A buffered value, else the end (once), else nothing yet.
    private static func take(_ state: inout State) -> Result<Value?, HubClientError>? {
        if state.head < state.buffer.count {
            let value = state.buffer[state.head]
            state.head += 1
            if state.head == state.buffer.count {
                state.buffer.removeAll(keepingCapacity: true)
                state.head = 0
            }
            return .success(value)
        }
        if state.cancelled { return .success(nil) }
        guard let terminal = state.terminal else { return nil }
        if state.terminalReported { return .success(nil) }
        state.terminalReported = true
        switch terminal {
        case .finished: return .success(nil)
        case let .failure(error): return .failure(error)
        }
    }

    /// Counts a consumed value and grants more demand once half the window is used.
    private func consumed(_ result: Result<Value?, HubClientError>) -> Result<Value?, HubClientError> {
        guard case .success(.some) = result else { return result }
        let threshold = max(1, window / 2)
        let grant = state.withLock { state -> Int in
            state.consumedSinceGrant += 1
            guard state.consumedSinceGrant >= threshold, state.terminal == nil, !state.cancelled else { return 0 }
            let grant = state.consumedSinceGrant
            state.consumedSinceGrant = 0
            return grant
        }
        if grant > 0 {
            eventLoop.execute { self.subscription?.request(.max(grant)) }
        }
        return result
    }

    /// Cancels the remote subscription; a waiting `next()` returns `nil`.
    func cancel() {
        let waiter = state.withLock { state -> CheckedContinuation<Result<Value?, HubClientError>, Never>? in
            guard !state.cancelled else { return nil }
            state.cancelled = true
            state.buffer = []
            state.head = 0
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: .success(nil))
        eventLoop.execute {
            self.subscription?.cancel()
            self.subscription = nil
        }
    }

    // MARK: Subscriber side (loop)

    func receive(subscription: any Subscription) {
        let cancelled = state.withLock { $0.cancelled }
        if cancelled {
            subscription.cancel()
            return
        }
        self.subscription = subscription
        subscription.request(.max(window))
    }

    func receive(_ input: Value) -> Subscribers.Demand {
        let waiter = state.withLock { state -> CheckedContinuation<Result<Value?, HubClientError>, Never>? in
            guard !state.cancelled else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.buffer.append(input)
            return nil
        }
        waiter?.resume(returning: .success(input))
        return .none
    }

    func receive(completion: Subscribers.Completion<HubClientError>) {
        subscription = nil
        let waiter = state.withLock { state -> CheckedContinuation<Result<Value?, HubClientError>, Never>? in
            state.terminal = completion
            // A waiter only exists while the buffer is empty: it gets the end now.
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            state.terminalReported = true
            return waiter
        }
        switch completion {
        case .finished: waiter?.resume(returning: .success(nil))
        case let .failure(error): waiter?.resume(returning: .failure(error))
        }
    }
}
