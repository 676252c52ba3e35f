import Foundation
import HubEngine
import HubRegistry
import HubValue

/// The store's reader: one thread with its own connection that serves history pages.
/// In WAL mode it reads a consistent snapshot while the writer commits, so a replay
/// never waits behind an fsync, and neither waits for the other.
final class SQLiteReader: @unchecked Sendable {
    /// One page to read.
    struct Request: Sendable {
        var id: UInt64
        var subject: Int64
        var after: UInt64
        var through: UInt64
        var limit: Int
        var maxBytes: Int
        var ttl: Duration?
    }

    private let worker = StoreWorkerThread()
    // Guarded by the worker's lock.
    private var queue: [Request] = []

    // The reader thread's own.
    private let connection: SQLiteConnection
    private var readPage: SQLiteStatement?
    private let clock: HistoryClock
    private let deliver: @Sendable (UInt64, Result<[HistoryEntry], SQLiteError>) -> Void

    init(
        connection: SQLiteConnection, clock: @escaping HistoryClock,
        deliver: @escaping @Sendable (UInt64, Result<[HistoryEntry], SQLiteError>) -> Void
    ) throws(SQLiteError) {
        self.connection = connection
        self.clock = clock
        self.deliver = deliver
        try connection.execute("PRAGMA query_only = 1")
        readPage = try connection.prepare(SQLiteSchema.readPage)
    }

    func start(name: String) {
        worker.start(name: name) { [self] in self.run() }
    }

    /// Queues a page read.
    func submit(_ request: Request) {
        worker.handIn { queue.append(request) }
    }

    /// Answers what is queued, then stops the thread and waits for it.
    func stop() {
        worker.stop()
    }

    private func run() {
        while let request = worker.next({ queue.isEmpty ? nil : queue.removeFirst() }) {
            deliver(request.id, read(request))
        }
        readPage = nil
    }

    private func read(_ request: Request) -> Result<[HistoryEntry], SQLiteError> {
        guard let statement = readPage else { return .success([]) }
        let cutoff = request.ttl.map { clock() - $0.nanosecondsClamped } ?? .min
        statement.bind(1, request.subject)
        statement.bind(2, Int64(clamping: request.after))
        statement.bind(3, Int64(clamping: request.through))
        statement.bind(4, cutoff)
        statement.bind(5, Int64(max(1, request.limit)))
        defer { statement.reset() }
        var page: [HistoryEntry] = []
        var bytes = 0
        do throws(SQLiteError) {
            while bytes < request.maxBytes, try statement.step() {
                let offset = UInt64(statement.int64(0))
                let parsed: Result<Value, JSONError> = statement.withBlob(1) { raw in
                    bytes += raw.count
                    do throws(JSONError) { return .success(try Value.parse(raw)) } catch { return .failure(error) }
                }
                switch parsed {
                case let .success(value):
                    page.append(HistoryEntry(offset: offset, value: value))
                case let .failure(error):
                    return .failure(SQLiteError(code: -1, message: "value at offset \(offset) is not JSON: \(error)"))
                }
            }
        } catch {
            return .failure(error)
        }
        return .success(page)
    }
}
