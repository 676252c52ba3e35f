extension Optional {
    /// Returns the wrapped value and sets `self` to `nil`.
    mutating func take() -> Wrapped? {
        let value = self
        self = nil
        return value
    }
}
