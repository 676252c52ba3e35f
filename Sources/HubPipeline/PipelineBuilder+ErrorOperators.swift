import HubEngine
import HubValue
import HubWire

/// Operators on failures: replaceError, retry, catch.
extension PipelineBuilder {
    func makeReplaceError(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let value = try constant(arguments[0], of: stage)
        let isError = stage.name == "replaceError"
        return { up, outer throws(HubError) in
            let v = try value(outer)
            if isError {
                return up.replaceError(with: v).setFailureType(to: HubError.self).eraseToAnyPublisher()
            }
            return up.replaceEmpty(with: v).eraseToAnyPublisher()
        }
    }

    /// The first wait of `retry()` between attempts, doubled after each failure up to ``retryMaximumBackoff``.
    static let retryBackoff: Duration = .milliseconds(100)
    /// The longest wait of `retry()`.
    static let retryMaximumBackoff: Duration = .seconds(30)

    func makeRetry(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        if let argument = arguments.first, argument.label == nil {
            let n = try count(argument, of: stage)
            return { up, outer throws(HubError) in
                let times = try n(outer)
                // Resubscriptions run synchronously: the count is bounded so that a source that
                // fails at once cannot hold the loop (each attempt is also charged to the budget).
                guard times <= Self.maximumRetries else {
                    throw Self.error(
                        "retry: at most \(Self.maximumRetries) retries, got \(times) (use retry() to retry after a delay)",
                        at: argument.position)
                }
                return self.retrying(up, times, stage)
            }
        }
        // retry() / retry(backoff: d): forever, on the hub's scheduler, waiting between attempts
        // (at least the minimum interval of the limits), so that a failing upstream cannot spin.
        // A limit_exceeded failure is not retried: the same limit would refuse the next attempt,
        // and retrying would hide from the subscriber why nothing comes.
        let initial = try arguments.first.map { argument throws(HubError) in try duration(argument, of: stage) } ?? Self.retryBackoff
        let maximum = Swift.max(Self.retryMaximumBackoff, initial)
        let scheduler = environment.scheduler
        return { up, _ in Self.retryForever(up, initial, maximum, scheduler) }
    }

    static func retryForever<S: Scheduler>(_ up: Pub, _ initial: Duration, _ maximum: Duration, _ scheduler: S) -> Pub {
        up.retry(backoff: initial, maximum: maximum, scheduler: scheduler, isRetryable: { $0.code != .limitExceeded })
            .eraseToAnyPublisher()
    }

    func makeCatch(_ stage: StageSyntax, _ arguments: [ArgumentSyntax]) throws(HubError) -> Operator {
        let handler = try pipeline(arguments[0], of: stage)
        return { up, _ in
            up.catch { error in self.withoutState { Self.built(handler, Self.errorValue(error)) } }.eraseToAnyPublisher()
        }
    }

    /// How an error reads as `.` in `catch`: `{"code": ..., "message": ..., "data": ...}`.
    static func errorValue(_ error: HubError) -> Value {
        .object(["code": .string(error.code.rawValue), "message": .string(error.message), "data": error.data ?? .null])
    }
}
