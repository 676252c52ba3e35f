/// What a named pipeline does when a value makes it fail (configuration `onError`).
///
/// Every failure is logged with the pipeline's name, the sender of the value that caused it
/// (when the value came from a `send`) and, for a pipeline from a configuration file, the
/// position of the failing expression in that file.
public enum PipelineFailurePolicy: String, Hashable, Sendable, CaseIterable {
    /// The pipeline fails (Combine's behaviour): its subscribers get the error, a shared
    /// pipeline's state is gone, a running pipeline stops.
    case fail
    /// The value is skipped: an expression that fails on it (in `map`, `filter`,
    /// `compactMap`, `scan`, `reduce`, `removeDuplicates(by:)`, `first(where:)`,
    /// `last(where:)`, `contains(where:)`, `prefix(while:)`, `drop(while:)`,
    /// `allSatisfy`) or an `into` target that refuses it makes that stage drop the value
    /// and go on, its state (a `scan`'s accumulator) as it was. Other failures (a source
    /// that fails, a comparison in `min(by:)`, `max(by:)`, `sort(by:)`) still fail it.
    case skip
    /// The pipeline fails and starts again from scratch after a back-off (1 s, doubling up
    /// to 60 s, reset by a value): its subscribers stay subscribed and see nothing of it.
    case restart
}
