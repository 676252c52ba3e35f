extension Subscribers {
    /// A number of values a subscriber asks for: `.none`, `.max(n)` or `.unlimited`.
    ///
    /// The arithmetic is Combine's: adding anything to `.unlimited` stays
    /// `.unlimited`, an overflowing sum becomes `.unlimited`, subtraction clamps
    /// at zero (and `.unlimited` minus a finite demand is `.unlimited`), and a
    /// negative `max` is a precondition failure.
    public struct Demand: Equatable, Comparable, Hashable, Sendable, CustomStringConvertible {
        /// ``unlimitedRaw`` stands for unlimited; any other value is a finite count ≤ `Int.max`.
        @usableFromInline
        internal let rawValue: UInt

        @inlinable @inline(__always)
        internal init(rawValue: UInt) {
            self.rawValue = Swift.min(Demand.unlimitedRaw, rawValue)
        }

        // Computed and inlinable rather than `static let`: a global constant read
        // from another module goes through a lazy-initialisation addressor on
        // every use, and these are read on every value delivered.
        @inlinable
        internal static var unlimitedRaw: UInt { UInt(Int.max) + 1 }

        /// A demand for as many values as the publisher can produce.
        @inlinable
        public static var unlimited: Demand { Demand(rawValue: .max) }

        /// A demand for no values.
        @inlinable
        public static var none: Demand { Demand(rawValue: 0) }

        /// A demand for at most `value` values. `value` must not be negative.
        @inlinable @inline(__always)
        public static func max(_ value: Int) -> Demand {
            precondition(value >= 0, "demand cannot be negative")
            return Demand(rawValue: UInt(value))
        }

        /// The finite count, or `nil` for `.unlimited`.
        @inlinable
        public var max: Int? { isUnlimited ? nil : Int(rawValue) }

        /// Whether this is `.unlimited`.
        @inlinable
        public var isUnlimited: Bool { rawValue == Demand.unlimitedRaw }

        /// `"unlimited"` or `"max(n)"`.
        public var description: String { isUnlimited ? "unlimited" : "max(\(rawValue))" }

        /// The sum; `.unlimited` when either side is, or when the sum overflows.
        @inlinable @inline(__always)
        public static func + (lhs: Demand, rhs: Demand) -> Demand {
            if lhs.isUnlimited || rhs.isUnlimited { return .unlimited }
            let (sum, overflow) = Int(lhs.rawValue).addingReportingOverflow(Int(rhs.rawValue))
            return overflow ? .unlimited : .max(sum)
        }

        /// Adds in place; see ``+(_:_:)-(Demand,Demand)``.
        @inlinable @inline(__always)
        public static func += (lhs: inout Demand, rhs: Demand) {
            if lhs.isUnlimited { return }
            lhs = lhs + rhs
        }

        /// Adds a count. A result below zero is a precondition failure, as in Combine.
        @inlinable @inline(__always)
        public static func + (lhs: Demand, rhs: Int) -> Demand {
            if lhs.isUnlimited { return .unlimited }
            let (sum, overflow) = Int(lhs.rawValue).addingReportingOverflow(rhs)
            return overflow ? .unlimited : .max(sum)
        }

        /// Adds a count in place.
        @inlinable @inline(__always)
        public static func += (lhs: inout Demand, rhs: Int) {
            lhs = lhs + rhs
        }

        /// Multiplies a finite demand; `.unlimited` stays `.unlimited`, overflow gives `.unlimited`.
        @inlinable
        public static func * (lhs: Demand, rhs: Int) -> Demand {
            if lhs.isUnlimited { return .unlimited }
            let (product, overflow) = Int(lhs.rawValue).multipliedReportingOverflow(by: rhs)
            return overflow ? .unlimited : .max(product)
        }

        /// Multiplies in place.
        @inlinable
        public static func *= (lhs: inout Demand, rhs: Int) {
            lhs = lhs * rhs
        }

        /// The difference, clamped at zero: `.unlimited - x` is `.unlimited`,
        /// a finite demand minus `.unlimited` is `.none`.
        @inlinable @inline(__always)
        public static func - (lhs: Demand, rhs: Demand) -> Demand {
            if lhs.isUnlimited { return .unlimited }
            if rhs.isUnlimited { return .none }
            return lhs.rawValue > rhs.rawValue ? Demand(rawValue: lhs.rawValue - rhs.rawValue) : .none
        }

        /// Subtracts in place.
        @inlinable @inline(__always)
        public static func -= (lhs: inout Demand, rhs: Demand) {
            lhs = lhs - rhs
        }

        /// Subtracts a count, clamping at zero; `.unlimited` stays `.unlimited`.
        @inlinable @inline(__always)
        public static func - (lhs: Demand, rhs: Int) -> Demand {
            if lhs.isUnlimited { return .unlimited }
            let (difference, overflow) = Int(lhs.rawValue).subtractingReportingOverflow(rhs)
            return overflow || difference < 0 ? .none : .max(difference)
        }

        /// Subtracts a count in place.
        @inlinable @inline(__always)
        public static func -= (lhs: inout Demand, rhs: Int) {
            if lhs.isUnlimited { return }
            lhs = lhs - rhs
        }

        /// Orders demands; `.unlimited` is greater than any finite demand.
        @inlinable
        public static func < (lhs: Demand, rhs: Demand) -> Bool {
            if lhs.isUnlimited { return false }
            if rhs.isUnlimited { return true }
            return lhs.rawValue < rhs.rawValue
        }

        /// Compares with a count; `.unlimited` is greater than every count.
        @inlinable @inline(__always)
        public static func > (lhs: Demand, rhs: Int) -> Bool { lhs.isUnlimited || Int(lhs.rawValue) > rhs }
        /// Compares with a count.
        @inlinable @inline(__always)
        public static func >= (lhs: Demand, rhs: Int) -> Bool { lhs.isUnlimited || Int(lhs.rawValue) >= rhs }
        /// Compares with a count.
        @inlinable @inline(__always)
        public static func < (lhs: Demand, rhs: Int) -> Bool { !lhs.isUnlimited && Int(lhs.rawValue) < rhs }
        /// Compares with a count.
        @inlinable @inline(__always)
        public static func <= (lhs: Demand, rhs: Int) -> Bool { !lhs.isUnlimited && Int(lhs.rawValue) <= rhs }
        /// Compares a count with a demand.
        @inlinable @inline(__always)
        public static func > (lhs: Int, rhs: Demand) -> Bool { rhs < lhs }
        /// Compares a count with a demand.
        @inlinable @inline(__always)
        public static func >= (lhs: Int, rhs: Demand) -> Bool { rhs <= lhs }
        /// Compares a count with a demand.
        @inlinable @inline(__always)
        public static func < (lhs: Int, rhs: Demand) -> Bool { rhs > lhs }
        /// Compares a count with a demand.
        @inlinable @inline(__always)
        public static func <= (lhs: Int, rhs: Demand) -> Bool { rhs >= lhs }
        /// Whether a demand equals a count (never true for `.unlimited`).
        @inlinable @inline(__always)
        public static func == (lhs: Demand, rhs: Int) -> Bool { !lhs.isUnlimited && Int(lhs.rawValue) == rhs }
        /// Whether a demand differs from a count.
        @inlinable @inline(__always)
        public static func != (lhs: Demand, rhs: Int) -> Bool { !(lhs == rhs) }
        /// Whether a count equals a demand.
        @inlinable @inline(__always)
        public static func == (lhs: Int, rhs: Demand) -> Bool { rhs == lhs }
        /// Whether a count differs from a demand.
        @inlinable @inline(__always)
        public static func != (lhs: Int, rhs: Demand) -> Bool { !(rhs == lhs) }
    }
}
