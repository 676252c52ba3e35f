/// One event seen by a recording subscriber, independent of the engine that produced it
/// (HubEngine or OpenCombine, for instance), so that histories from both can be compared directly.
public enum RecordedEvent<Value: Equatable, Failure: Equatable>: Equatable, CustomStringConvertible {
    /// The subscription arrived.
    case subscription
    /// A value arrived.
    case value(Value)
    /// The publisher finished.
    case finished
    /// The publisher failed.
    case failure(Failure)

    /// `subscription`, `value(…)`, `finished` or `failure(…)`.
    public var description: String {
        switch self {
        case .subscription: return "subscription"
        case .value(let value): return "value(\(value))"
        case .finished: return "finished"
        case .failure(let error): return "failure(\(error))"
        }
    }
}
