import Synchronization

private let nextIdentifier = Atomic<UInt>(1)

/// A unique identity for a publisher or subscriber, as Combine's `CombineIdentifier`.
public struct CombineIdentifier: Hashable, Sendable, CustomStringConvertible {
    private let rawValue: UInt
    private let isObject: Bool

    /// A fresh identifier, unique within the process.
    public init() {
        rawValue = nextIdentifier.wrappingAdd(1, ordering: .relaxed).oldValue
        isObject = false
    }

    /// The identifier of an object, stable and unique for its lifetime.
    public init(_ object: AnyObject) {
        rawValue = UInt(bitPattern: ObjectIdentifier(object).hashValue)
        isObject = true
    }

    /// A hexadecimal rendering of the identifier.
    public var description: String { "0x" + String(rawValue, radix: 16) }
}

/// A type with a ``CombineIdentifier``, as Combine's `CustomCombineIdentifierConvertible`.
public protocol CustomCombineIdentifierConvertible {
    /// The identity of this publisher or subscriber.
    var combineIdentifier: CombineIdentifier { get }
}

extension CustomCombineIdentifierConvertible where Self: AnyObject {
    /// The object's identity.
    public var combineIdentifier: CombineIdentifier { CombineIdentifier(self) }
}
