import CSQLite
import HubWire

/// A failure of SQLite: its result code and message, and what the store was doing.
public struct SQLiteError: Error, Hashable, Sendable, CustomStringConvertible {
    /// SQLite's (extended) result code.
    public var code: Int32
    /// SQLite's message, prefixed with what failed.
    public var message: String

    /// A failure with SQLite's `code` and `message`.
    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// `message (SQLite code N)`.
    public var description: String { "\(message) (SQLite code \(code))" }

    /// The protocol error a client sees: `internal`, naming the store's failure.
    var hubError: HubError {
        HubError(.internal, "the durable store failed: \(description)")
    }
}
