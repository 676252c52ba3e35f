import Foundation
import HubEngine
import HubRegistry
import HubValue
import HubWire
import Logging

/// The node's binding to its key-value bucket, made once on the node's worker queue and
/// used only there.
final class KeyValueBinding: @unchecked Sendable {
    private var store: NATSKeyValue?

    func bind(_ connection: NATSConnection, bucket: String, maxValueBytes: Int) throws(NATSError) -> NATSKeyValue {
        if let store { return store }
        let bound = try NATSKeyValue(connection: connection, bucket: bucket, maxValueBytes: maxValueBytes)
        store = bound
        return bound
    }
}
