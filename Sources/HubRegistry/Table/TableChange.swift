import HubValue
import HubWire

/// One change of a table subject: `{"key": K, "value": V}`, the shape `groupBy` emits.
/// `V` upserts the key; `null` deletes it. A key is a string, or an integer, which is
/// normalised to its decimal text (`7` and `"7"` are the same key).
public struct TableChange: Hashable, Sendable {
    /// The most UTF-8 bytes a key may have.
    public static let maxKeyBytes = 1024

    /// The key, normalised.
    public var key: String
    /// The new value of the key, or `nil` when the change deletes it.
    public var value: Value?

    /// The change `value` stands for, or the reason it is not one (for the sender's error).
    public static func parse(_ value: Value) -> Result<TableChange, TableChange.Refusal> {
        guard case let .object(fields) = value else {
            return .failure(Refusal("a table's values are {\"key\": K, \"value\": V} objects (got \(value.typeDescription))"))
        }
        for name in fields.keys where name != "key" && name != "value" {
            return .failure(Refusal("a table change has only 'key' and 'value' (got '\(name)')"))
        }
        guard let rawKey = fields["key"] else { return .failure(Refusal("a table change needs a 'key'")) }
        guard let changed = fields["value"] else {
            return .failure(Refusal("a table change needs a 'value' (null deletes the key)"))
        }
        let key: String
        switch rawKey {
        case let .string(text): key = text
        case let .int(number): key = String(number)
        case let .double(number):
            guard let integer = Int64(exactly: number) else {
                return .failure(Refusal("a table key is a string or an integer (got \(number))"))
            }
            key = String(integer)
        default:
            return .failure(Refusal("a table key is a string or an integer (got \(rawKey.typeDescription))"))
        }
        guard key.utf8.count <= maxKeyBytes else {
            return .failure(Refusal("a table key has at most \(maxKeyBytes) bytes (got \(key.utf8.count))"))
        }
        return .success(TableChange(key: key, value: changed.isNull ? Value?.none : changed))
    }

    /// The key of a stored change (its values were checked when it was sent): `nil` if it is none.
    public static func key(of value: Value) -> String? {
        guard case let .success(change) = parse(value) else { return nil }
        return change.key
    }

    /// The change as the table's values carry it, its key normalised: `{"key": K, "value": V}`.
    public var json: Value { ["key": .string(key), "value": value ?? .null] }

    /// The reason a value is not a table change.
    public struct Refusal: Error, Hashable, Sendable {
        /// What is wrong with it.
        public var message: String
        init(_ message: String) { self.message = message }
    }
}
