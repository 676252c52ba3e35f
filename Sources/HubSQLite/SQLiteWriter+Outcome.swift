import CSQLite
import CSQLiteVFS
import DequeModule
import Foundation
import HubEngine
import HubRegistry
import HubValue
import HubWire

extension SQLiteWriter.Outcome {
    /// The subject the outcome is about (`nil` for a checkpoint's or a probe's).
    var subject: Int64? {
        switch self {
        case let .appended(subject, _), let .failed(subject, _): return subject
        case .checkpointed, .probed: return nil
        }
    }
}
