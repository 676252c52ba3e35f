import Logging

extension Publishers {
    /// Logs every publishing event through a swift-log `Logger`, as Combine's `Publishers.Print`
    /// prints them.
    ///
    /// The messages are Combine's, each preceded by `"<prefix>: "` when the prefix is not
    /// empty: `receive subscription: (<subscription>)`, `request max: (n)`,
    /// `request unlimited`, `receive value: (<value>)`, `request max: (n) (synchronous)` or
    /// `request unlimited (synchronous)` for the demand returned from a value,
    /// `receive finished`, `receive error: (<error>)` and `receive cancel`.
    /// Events pass through unchanged. As in Combine, a request or a cancel that arrives
    /// after the end is still logged (it has no other effect); `request(.none)` is neither
    /// logged nor forwarded.
    public struct Print<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher observed.
        public let upstream: Upstream
        /// The text in front of each message.
        public let prefix: String
        /// Where the messages go.
        public let logger: Logger
        /// The level the messages are logged at.
        public let level: Logger.Level

        /// A logging observer of `upstream`.
        public init(upstream: Upstream, prefix: String, to logger: Logger, level: Logger.Level = .info) {
            self.upstream = upstream
            self.prefix = prefix
            self.logger = logger
            self.level = level
        }

        /// Attaches `subscriber`; see ``Publisher/receive(subscriber:)``.
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.receive(subscriber: Inner(
                downstream: subscriber, prefix: prefix.isEmpty ? "" : "\(prefix): ", logger: logger, level: level))
        }

        private final class Inner<Downstream: Subscriber>: Subscriber, Subscription
        where Downstream.Input == Upstream.Output, Downstream.Failure == Upstream.Failure {
            typealias Input = Upstream.Output
            typealias Failure = Upstream.Failure

            private var downstream: Downstream?
            private var upstream: (any Subscription)?
            private var subscribed = false
            private let prefix: String
            private let logger: Logger
            private let level: Logger.Level

            init(downstream: Downstream, prefix: String, logger: Logger, level: Logger.Level) {
                self.downstream = downstream
                self.prefix = prefix
                self.logger = logger
                self.level = level
            }

            private func log(_ text: String) {
                logger.log(level: level, "\(prefix)\(text)")
            }

            private static func describe(_ demand: Subscribers.Demand) -> String {
                demand.max.map { "max: (\($0))" } ?? "unlimited"
            }

            func receive(subscription: any Subscription) {
                guard !subscribed, let downstream else {
                    subscription.cancel()
                    return
                }
                log("receive subscription: (\(subscription))")
                subscribed = true
                upstream = subscription
                downstream.receive(subscription: self)
            }

            func receive(_ input: Input) -> Subscribers.Demand {
                guard let downstream else { return .none }
                log("receive value: (\(input))")
                let more = downstream.receive(input)
                log("request \(Self.describe(more)) (synchronous)")
                return more
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                guard let downstream = downstream.take() else { return }
                switch completion {
                case .finished: log("receive finished")
                case .failure(let error): log("receive error: (\(error))")
                }
                upstream = nil
                downstream.receive(completion: completion)
            }

            func request(_ demand: Subscribers.Demand) {
                guard demand > 0 else { return }
                // Logged even when it has no effect any more, as Combine does.
                log("request \(Self.describe(demand))")
                guard downstream != nil, let upstream else { return }
                upstream.request(demand)
            }

            func cancel() {
                // Logged even when it has no effect any more, as Combine does.
                log("receive cancel")
                guard downstream != nil else { return }
                downstream = nil
                upstream.take()?.cancel()
            }
        }
    }
}

extension Publisher {
    /// Logs every publishing event of this publisher through `logger`, each message
    /// preceded by `prefix` (see ``Publishers/Print``). Events pass through unchanged.
    public func print(_ prefix: String = "", to logger: Logger, level: Logger.Level = .info) -> Publishers.Print<Self> {
        Publishers.Print(upstream: self, prefix: prefix, to: logger, level: level)
    }
}
