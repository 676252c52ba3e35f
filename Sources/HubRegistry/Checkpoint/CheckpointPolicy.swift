/// How a running pipeline (`run: true`) checkpoints its state: when, and where it starts
/// when its text changed since its last checkpoint.
///
/// A checkpoint holds every stateful operator's state and the offset of each source with
/// history it consumed; the values the pipeline wrote `into` subjects since the previous
/// checkpoint are committed with it, in one transaction of the store, and reach the
/// subjects' subscribers then. A checkpoint is due once ``every`` values have been
/// consumed, or ``every`` written, since the last one, or ``interval`` after the first
/// of them, whichever comes first; it is taken at the end of the event loop's pass in
/// which it became due, once the previous one is stored.
public struct CheckpointPolicy: Sendable, Hashable {
    /// Where a pipeline whose text changed since its checkpoint starts.
    public enum RestartPosition: String, Sendable, Hashable, CaseIterable {
        /// From the checkpoint anyway: its sources' offsets, and the state of every operator
        /// whose place and kind in the text are the same (the others start afresh).
        case checkpoint
        /// Afresh, from the oldest value its sources' history still keeps.
        case beginning
        /// Afresh, from its sources' next values.
        case latest
    }

    /// A checkpoint once this many values were consumed, or this many written, since the
    /// last one (`nil`: no bound by count). 1, the default: at the end of every pass that
    /// consumed or wrote anything (the commits group by themselves while one is being stored).
    public var every: Int?
    /// A checkpoint at the latest this long after the first value consumed or written
    /// since the last one (`nil`: no bound by time).
    public var interval: Duration?
    /// Where the pipeline starts when its text changed since its checkpoint.
    public var restartFrom: RestartPosition
    /// Whether the pipeline checkpoints only when the hub has a durable store (the
    /// default, which a configuration without a `checkpoint` key gets); otherwise it
    /// checkpoints into the hub's memory store too (its state then survives the
    /// pipeline's restarts within the process, not the process's).
    public var onlyWithDurableStore: Bool

    /// A checkpoint every `every` values or `interval`, starting from `restartFrom` after a change of text.
    public init(
        every: Int? = 1, interval: Duration? = .seconds(1), restartFrom: RestartPosition = .beginning,
        onlyWithDurableStore: Bool = false
    ) {
        self.every = every.map { Swift.max(1, $0) }
        self.interval = interval
        self.restartFrom = restartFrom
        self.onlyWithDurableStore = onlyWithDurableStore
    }

    /// What a running pipeline without a `checkpoint` key gets: a checkpoint at the end
    /// of every pass that consumed or wrote values, when the hub has a durable store.
    public static let automatic = CheckpointPolicy(onlyWithDurableStore: true)
}
