import OrderedCollections

/// A dynamic JSON value: what the hub carries from publishers to subscribers.
///
/// Objects keep the insertion order of their keys (``object(_:)`` holds an
/// `OrderedDictionary`), so a value written back to JSON comes out in the order
/// it came in. Integers that fit in 64 bits are ``int(_:)`` and stay exact;
/// every other number is ``double(_:)``.
///
/// Equality is structural with two JSON-minded exceptions:
/// - numbers compare by numeric value: `.int(1) == .double(1.0)`, and an
///   `Int64` equals a `Double` only when the double is exactly that integer;
/// - objects compare as JSON objects, i.e. as sets of members: the same keys
///   with equal values, in any order.
///
/// `hash(into:)` is consistent with both rules. A ``double(_:)`` should be
/// finite: the parser never produces NaN or an infinity, and the writer
/// writes them as `null`. A NaN is not equal to itself.
public enum Value: Sendable {
    /// JSON `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer that fits in 64 bits, kept exactly.
    case int(Int64)
    /// Any other number (a fraction, an exponent, or an integer beyond `Int64`).
    case double(Double)
    /// A string of Unicode text.
    case string(String)
    /// An ordered list of values.
    case array([Value])
    /// An object; its keys keep their insertion order.
    case object(Object)

    /// The members of an object, in insertion order. Clients can name and use
    /// it through this alias without importing `OrderedCollections`.
    public typealias Object = OrderedDictionary<String, Value>
}

// MARK: - Equality and hashing

extension Value: Hashable {
    /// Whether two values are equal: numbers by numeric value, objects as
    /// unordered sets of members, everything else structurally.
    public static func == (lhs: Value, rhs: Value) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null):
            return true
        case let (.bool(a), .bool(b)):
            return a == b
        case let (.int(a), .int(b)):
            return a == b
        case let (.double(a), .double(b)):
            return a == b
        case let (.int(a), .double(b)), let (.double(b), .int(a)):
            guard let exact = Int64(exactly: b) else { return false }
            return exact == a
        case let (.string(a), .string(b)):
            return a == b
        case let (.array(a), .array(b)):
            return a == b
        case let (.object(a), .object(b)):
            guard a.count == b.count else { return false }
            for (key, value) in a {
                guard let other = b[key], other == value else { return false }
            }
            return true
        default:
            return false
        }
    }

    /// Hashes consistently with ``==(_:_:)``: a double that is exactly an
    /// `Int64` hashes as that integer, and object members are hashed
    /// independently of their order.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0 as UInt8)
        case let .bool(b):
            hasher.combine(1 as UInt8)
            hasher.combine(b)
        case let .int(i):
            hasher.combine(2 as UInt8)
            hasher.combine(i)
        case let .double(d):
            if let exact = Int64(exactly: d) {
                hasher.combine(2 as UInt8)
                hasher.combine(exact)
            } else {
                hasher.combine(3 as UInt8)
                hasher.combine(d)
            }
        case let .string(s):
            hasher.combine(4 as UInt8)
            hasher.combine(s)
        case let .array(a):
            hasher.combine(5 as UInt8)
            hasher.combine(a.count)
            for element in a { hasher.combine(element) }
        case let .object(o):
            hasher.combine(6 as UInt8)
            hasher.combine(o.count)
            // Order-independent: a commutative sum of per-member hashes.
            var sum = 0
            for (key, value) in o {
                var member = Hasher()
                member.combine(key)
                member.combine(value)
                sum &+= member.finalize()
            }
            hasher.combine(sum)
        }
    }
}

// MARK: - Literals

extension Value: ExpressibleByNilLiteral {
    /// `nil` is JSON `null`.
    @inlinable
    public init(nilLiteral: ()) { self = .null }
}

extension Value: ExpressibleByBooleanLiteral {
    /// `true` / `false`.
    @inlinable
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension Value: ExpressibleByIntegerLiteral {
    /// An integer literal is an exact ``int(_:)``.
    @inlinable
    public init(integerLiteral value: Int64) { self = .int(value) }
}

extension Value: ExpressibleByFloatLiteral {
    /// A floating-point literal is a ``double(_:)``.
    @inlinable
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension Value: ExpressibleByStringLiteral {
    /// A string literal is a ``string(_:)``.
    @inlinable
    public init(stringLiteral value: String) { self = .string(value) }
}

extension Value: ExpressibleByArrayLiteral {
    /// An array literal is an ``array(_:)``.
    @inlinable
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
}

extension Value: ExpressibleByDictionaryLiteral {
    /// A dictionary literal is an ``object(_:)`` in the literal's key order;
    /// for a repeated key the last value wins (at the first one's position).
    public init(dictionaryLiteral elements: (String, Value)...) {
        var object = Object(minimumCapacity: elements.count)
        for (key, value) in elements { object[key] = value }
        self = .object(object)
    }
}

// MARK: - Accessors

extension Value {
    /// The member `key` of an object, or `nil` when this is not an object or has no such key.
    @inlinable
    public subscript(key key: String) -> Value? {
        if case let .object(o) = self { return o[key] }
        return nil
    }

    /// The element at `index` of an array, or `nil` when this is not an array or the index is out of range.
    @inlinable
    public subscript(index index: Int) -> Value? {
        if case let .array(a) = self, a.indices.contains(index) { return a[index] }
        return nil
    }

    /// Shorthand for ``subscript(key:)``: `value["price"]`.
    @inlinable
    public subscript(_ key: String) -> Value? { self[key: key] }

    /// Shorthand for ``subscript(index:)``: `value[0]`.
    @inlinable
    public subscript(_ index: Int) -> Value? { self[index: index] }

    /// The integer of an ``int(_:)``, or of a ``double(_:)`` that is exactly an `Int64`; otherwise `nil`.
    @inlinable
    public var intValue: Int64? {
        switch self {
        case let .int(i): return i
        case let .double(d): return Int64(exactly: d)
        default: return nil
        }
    }

    /// The number as a `Double` (an ``int(_:)`` is converted, possibly rounding); `nil` for non-numbers.
    @inlinable
    public var doubleValue: Double? {
        switch self {
        case let .int(i): return Double(i)
        case let .double(d): return d
        default: return nil
        }
    }

    /// The text of a ``string(_:)``, else `nil`.
    @inlinable
    public var stringValue: String? {
        if case let .string(s) = self { return s }
        return nil
    }

    /// The flag of a ``bool(_:)``, else `nil`.
    @inlinable
    public var boolValue: Bool? {
        if case let .bool(b) = self { return b }
        return nil
    }

    /// The elements of an ``array(_:)``, else `nil`.
    @inlinable
    public var arrayValue: [Value]? {
        if case let .array(a) = self { return a }
        return nil
    }

    /// The members of an ``object(_:)``, else `nil`.
    @inlinable
    public var objectValue: Object? {
        if case let .object(o) = self { return o }
        return nil
    }

    /// Whether this is ``null``.
    @inlinable
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}

// MARK: - Description

extension Value: CustomStringConvertible {
    /// Compact JSON, as ``jsonString()`` writes it.
    public var description: String { jsonString() }
}

extension Value {
    /// The JSON type's name as an error message says it ("a number", "an object", "null").
    public var typeDescription: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int, .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
