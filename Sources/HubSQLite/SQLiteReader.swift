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

    /// Answers what is queued, stops the thread, waits for it and closes the connection.
    func stop() {
        worker.stop()
        connection.close()
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
        let limit = max(1, request.limit)
        statement.bind(1, request.subject)
        statement.bind(2, Int64(clamping: request.after))
        // A row is keyed by its last value: one that ends this far past `through` may
        // still begin within it.
        statement.bind(3, Int64(clamping: min(request.through, SQLiteSchema.maxOffset) + UInt64(SQLiteSchema.maxValuesPerRow)))
        statement.bind(4, cutoff)
        statement.bind(5, Int64(limit))
        defer { statement.reset() }
        var page: [HistoryEntry] = []
        var bytes = 0
        do throws(SQLiteError) {
            while page.count < limit, bytes < request.maxBytes, try statement.step() {
                let last = UInt64(statement.int64(0))
                let count = max(1, statement.int64(2))
                let values = try statement.withBlob(1) { raw throws(SQLiteError) in
                    bytes += raw.count
                    return try SQLiteSchema.values(ofRow: raw, count: count, offset: last)
                }
                var offset = last &- UInt64(values.count) &+ 1
                for value in values {
                    defer { offset += 1 }
                    guard offset > request.after else { continue }
                    guard offset <= request.through, page.count < limit else { return .success(page) }
                    page.append(HistoryEntry(offset: offset, value: value))
                }
            }
        } catch {
            return .failure(error)
        }
        return .success(page)
    }
}
