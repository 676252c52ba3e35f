import HubEngine
import HubValue
import HubWire

/// Skipping the values an expression fails on (a named pipeline with `onError: skip`).
extension PipelineBuilder {
    /// The result of `body`, or `nil` after handing its failure to `skip`.
    static func skipping<T>(_ skip: (HubError) -> Void, _ body: () throws(HubError) -> T) -> T? {
        do {
            return try body()
        } catch {
            skip(error)
            return nil
        }
    }

    /// Whether `f` holds for `value`, or `nil` (the value is skipped) when it fails.
    static func truth(_ skip: (HubError) -> Void, _ f: ElementFunction, _ value: Value) -> Bool? {
        skipping(skip) { () throws(HubError) in ExpressionEvaluator.isTruthy(try f(value, nil)) }
    }

    /// Each value with its predicate's truth, `[value, bool]`, the values it fails on dropped:
    /// what a predicate operator works on when failing values are skipped.
    static func judged(_ up: Pub, _ skip: @escaping (HubError) -> Void, _ f: @escaping ElementFunction) -> Pub {
        up.compactMap { value in truth(skip, f, value).map { Value.array([value, .bool($0)]) } }.eraseToAnyPublisher()
    }

    /// The truth in a `[value, bool]` pair of ``judged(_:_:_:)``.
    static func judgement(_ pair: Value) -> Bool { pair[1] == .bool(true) }

    /// The value in a `[value, bool]` pair of ``judged(_:_:_:)``.
    static func judgedValue(_ pair: Value) -> Value { pair[0] ?? .null }
}
