extension Publisher {
    /// Replaces each `nil` value with `output`, as Combine's `replaceNil(with:)` (a ``Publishers/Map``).
    public func replaceNil<T>(with output: T) -> Publishers.Map<Self, T> where Output == T? {
        Publishers.Map(upstream: self) { $0 ?? output }
    }
}
