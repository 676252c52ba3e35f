import CSQLite
import CSQLiteVFS
import DequeModule
import Foundation
import HubEngine
import HubRegistry
import HubValue
import HubWire

/// Pages of a log's history, read on the reader thread.
extension SQLiteStore {
    /// Queues a page read for `log`.
    func read(
        _ log: SQLiteLog, after: UInt64, through: UInt64, limit: Int, maxBytes: Int,
        completion: @escaping (Result<[HistoryEntry], HubError>) -> Void
    ) {
        guard !closed else {
            completion(.failure(HubError(.internal, "the durable store is closed")))
            return
        }
        nextRead += 1
        reads[nextRead] = (log.name, completion)
        // A row that straddles the size bound keeps values behind it (see SQLiteSchema).
        let size = UInt64(log.retention.size)
        let bound = log.lastOffset > size ? log.lastOffset - size : 0
        reader.submit(SQLiteReader.Request(
            id: nextRead, subject: log.id, after: max(after, bound), through: through, limit: limit, maxBytes: maxBytes,
            ttl: log.retention.ttl))
    }

    func answered(read id: UInt64, _ result: Result<[HistoryEntry], SQLiteError>) {
        guard let (name, completion) = reads.removeValue(forKey: id) else { return }
        completion(result.mapError { error in
            let hubError = error.hubError
            return HubError(hubError.code, "subject '\(name)': \(hubError.message)", data: hubError.data)
        })
    }
}
