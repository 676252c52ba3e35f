import HubValue
import HubWire

/// The embedded store: each subject's history in the process's memory, bounded by
/// its retention. Nothing survives the process, so every log it opens begins a new
/// epoch. Appends and reads complete at once, on the calling (loop) thread.
public final class MemoryStore: SubjectStore {
    private let clock: HistoryClock
    private var logs: [String: MemoryLog] = [:]
    private var checkpoints: [String: Value] = [:]

    /// A store stamping values with `clock` (the calendar, unless tests give another).
    public init(clock: @escaping HistoryClock = systemHistoryClock) {
        self.clock = clock
    }

    /// The subject's log: the one already open (with `retention` from now on), or a new one.
    public func openLog(subject name: String, retention: HistoryRetention) throws(HubError) -> any SubjectLog {
        if let log = logs[name] {
            log.retention = retention
            return log
        }
        let log = MemoryLog(epoch: MemoryStore.newEpoch(), retention: retention, clock: clock)
        logs[name] = log
        return log
    }

    /// Forgets the subject's log.
    public func removeLog(subject name: String) throws(HubError) {
        logs[name] = nil
    }

    /// Nothing to finish.
    public func close() {}

    /// The last checkpoint committed for `pipeline` in this process, at once.
    public func loadCheckpoint(pipeline: String, completion: @escaping (Result<Value?, HubError>) -> Void) {
        completion(.success(checkpoints[pipeline]))
    }

    /// Appends what `body` appends (each committed at once) and keeps `checkpoint`: nothing
    /// can fail between them.
    public func commit(
        checkpoint: Value, pipeline: String, appending body: () -> Void,
        completion: @escaping (Result<Void, HubError>) -> Void
    ) {
        body()
        checkpoints[pipeline] = checkpoint
        completion(.success(()))
    }

    /// A fresh epoch: 16 random hexadecimal digits.
    public static func newEpoch() -> String {
        let random = UInt64.random(in: 0...UInt64.max)
        let digits = String(random, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
