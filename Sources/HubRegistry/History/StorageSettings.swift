/// The `storage` section of a broker's configuration as the reader hands it to a
/// ``DurableStorageKind``: the store's directory and the other keys' scalar values.
public struct StorageSettings: Sendable, Hashable {
    /// A key's value, resolved as YAML 1.2's core schema resolves a plain scalar (a quoted
    /// scalar is always a string).
    public enum Scalar: Sendable, Hashable {
        /// A string.
        case string(String)
        /// `true` or `false`.
        case bool(Bool)
        /// A number, as written.
        case number(String)
        /// `null`, `~` or nothing.
        case null
        /// Not a scalar (a mapping or a sequence), described for an error message.
        case other(String)
    }

    /// The store's directory, made absolute against the configuration file's directory.
    public var path: String
    /// The section's other keys and their values.
    public var values: [String: Scalar]

    /// Settings for the directory `path` with the keys `values`.
    public init(path: String, values: [String: Scalar] = [:]) {
        self.path = path
        self.values = values
    }

    /// The value of `key` as one of `T`'s cases (by raw value); `nil` when the section does
    /// not have `key`.
    public func choice<T: RawRepresentable & CaseIterable>(_ key: String, _ type: T.Type) throws(StorageSettingsError) -> T?
    where T.RawValue == String {
        guard let value = values[key] else { return nil }
        let names = T.allCases.map(\.rawValue)
        guard case .string(let text) = value, let choice = T(rawValue: text) else {
            throw StorageSettingsError(
                key: key, message: "expected one of \(names.joined(separator: ", ")) (got \(Self.describe(value)))")
        }
        return choice
    }

    /// The value of `key` as `true` or `false`; `nil` when the section does not have `key`.
    public func bool(_ key: String) throws(StorageSettingsError) -> Bool? {
        guard let value = values[key] else { return nil }
        guard case .bool(let bool) = value else {
            throw StorageSettingsError(key: key, message: "expected true or false (got \(Self.describe(value)))")
        }
        return bool
    }

    /// A value as an error message shows it.
    static func describe(_ value: Scalar) -> String {
        switch value {
        case .string(let text): "\"\(text)\""
        case .bool(let bool): "\(bool)"
        case .number(let text): text
        case .null: "null"
        case .other(let description): description
        }
    }
}

/// A wrong value in a `storage` section: the key, and what is wrong with it. The
/// configuration reader reports it at that key's place in the file.
public struct StorageSettingsError: Error, Sendable, Hashable {
    /// The key whose value is wrong.
    public var key: String
    /// What is wrong, for a person.
    public var message: String

    /// The error for `key`.
    public init(key: String, message: String) {
        self.key = key
        self.message = message
    }
}
