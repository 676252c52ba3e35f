import CNATS
#if canImport(Glibc)
import Glibc
#endif

/// A message received from NATS: its subject, payload and headers, copied out of the
/// library's message (which is destroyed before the handler runs).
public struct NATSMessage: Sendable {
    /// The subject it was published to.
    public let subject: String
    /// Its payload.
    public let payload: [UInt8]
    /// Its headers (the first value of each key).
    public let headers: [String: String]

    /// A message (tests, or a decoded one).
    public init(subject: String, payload: [UInt8], headers: [String: String] = [:]) {
        self.subject = subject
        self.payload = payload
        self.headers = headers
    }

    /// Copies `message` (a `natsMsg *`).
    init(copying message: OpaquePointer) {
        subject = String(cString: natsMsg_GetSubject(message))
        let length = Int(natsMsg_GetDataLength(message))
        if length > 0, let data = natsMsg_GetData(message) {
            payload = data.withMemoryRebound(to: UInt8.self, capacity: length) {
                Array(UnsafeBufferPointer(start: $0, count: length))
            }
        } else {
            payload = []
        }
        var headers: [String: String] = [:]
        var keys: UnsafeMutablePointer<UnsafePointer<CChar>?>?
        var count: Int32 = 0
        if natsMsgHeader_Keys(message, &keys, &count) == NATS_OK, let keys {
            for index in 0..<Int(count) {
                guard let key = keys[index] else { continue }
                var value: UnsafePointer<CChar>?
                if natsMsgHeader_Get(message, key, &value) == NATS_OK, let value {
                    headers[String(cString: key)] = String(cString: value)
                }
            }
            free(keys)
        }
        self.headers = headers
    }
}
