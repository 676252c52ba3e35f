/// A completion that runs once; later results are dropped. Loop thread only.
final class OnceCompletion<T> {
    private var completion: ((T) -> Void)?
    /// Runs after the completion (for example to cancel a timer).
    var onComplete: (() -> Void)?

    init(_ completion: @escaping (T) -> Void) { self.completion = completion }

    var isDone: Bool { completion == nil }

    func complete(_ value: T) {
        guard let completion else { return }
        self.completion = nil
        completion(value)
        onComplete?()
        onComplete = nil
    }
}
