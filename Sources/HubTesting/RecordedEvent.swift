/// One event seen by a recording subscriber, independent of the engine that produced it
/// (HubCore or OpenCombine), so that histories from both can be compared directly.
enum RecordedEvent<Value: Equatable, Failure: Equatable>: Equatable, CustomStringConvertible {
    case subscription
    case value(Value)
    case finished
    case failure(Failure)

    var description: String {
        switch self {
        case .subscription: return "subscription"
        case .value(let value): return "value(\(value))"
        case .finished: return "finished"
        case .failure(let error): return "failure(\(error))"
        }
    }
}

/// The error the tests send and expect.
enum TestError: Error, Equatable, Hashable, CustomStringConvertible {
    case oops
    case other(Int)

    var description: String {
        switch self {
        case .oops: return "oops"
        case .other(let n): return "other(\(n))"
        }
    }

    /// How a test records an untyped error (a try-variant's `any Error`): the `TestError`
    /// itself, or `.other(-1)` for an error of another type.
    static func recorded(_ error: any Error) -> TestError { (error as? TestError) ?? .other(-1) }
}
