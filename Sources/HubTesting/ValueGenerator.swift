import HubValue

/// Random JSON values from a seeded generator, for round-trip and cross-check tests.
public struct ValueGenerator {
    /// The random source.
    public var rng: SeededGenerator
    /// Whether doubles may be any finite bit pattern (subnormals, huge
    /// exponents) and strings may contain U+FEFF. Off for comparisons with
    /// Foundation, which drops a leading U+FEFF from strings.
    public var wild: Bool

    /// A generator seeded with `seed`.
    public init(seed: UInt64, wild: Bool = true) {
        rng = SeededGenerator(seed: seed)
        self.wild = wild
    }

    /// An array or object at the top level.
    public mutating func document() -> Value {
        Bool.random(using: &rng) ? .array(array(depth: 1)) : .object(object(depth: 1))
    }

    /// Any value; containers nest at most to depth 5.
    public mutating func value(depth: Int) -> Value {
        let kinds = depth >= 5 ? 5 : 7
        switch Int.random(in: 0..<kinds, using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(int())
        case 3: return .double(double())
        case 4: return .string(string())
        case 5: return .array(array(depth: depth + 1))
        default: return .object(object(depth: depth + 1))
        }
    }

    /// Up to five values.
    public mutating func array(depth: Int) -> [Value] {
        (0..<Int.random(in: 0..<6, using: &rng)).map { _ in value(depth: depth) }
    }

    /// Up to five members.
    public mutating func object(depth: Int) -> Value.Object {
        var members = Value.Object()
        for _ in 0..<Int.random(in: 0..<6, using: &rng) {
            members[string()] = value(depth: depth)
        }
        return members
    }

    /// An integer, often at a boundary (Int64 limits, 2^53).
    public mutating func int() -> Int64 {
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return [Int64.min, .max, 0, -1, 1, 1 << 53, (1 << 53) + 1, -(1 << 53) - 1].randomElement(using: &rng)!
        case 1: return Int64.random(in: .min ... .max, using: &rng)
        default: return Int64.random(in: -1000...1000, using: &rng)
        }
    }

    /// A finite double, often at a boundary of the shortest round-trip writer.
    public mutating func double() -> Double {
        switch Int.random(in: 0..<5, using: &rng) {
        case 0:
            return Double.random(in: -1e6...1e6, using: &rng)
        case 1:
            return Double(Int.random(in: -100...100, using: &rng)) / 4
        case 2 where wild:
            while true {
                let d = Double(bitPattern: UInt64.random(in: .min ... .max, using: &rng))
                if d.isFinite { return d }
            }
        case 3:
            return [0.1, 1.0, -0.0, 1e300, .leastNonzeroMagnitude, 1e-7, 2.5e15, 1e16, 123456.789].randomElement(using: &rng)!
        default:
            return Double.random(in: -1...1, using: &rng) * pow10(Int.random(in: -30...30, using: &rng))
        }
    }

    private func pow10(_ e: Int) -> Double {
        var result = 1.0
        for _ in 0..<abs(e) { result *= 10 }
        return e < 0 ? 1 / result : result
    }

    /// A string of up to 11 scalars, rich in characters JSON must escape.
    public mutating func string() -> String {
        let pool: [Unicode.Scalar] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{8}", "\u{c}", "\u{0}", "\u{1f}", "\u{7f}", "é", "€", "中", "😀", "\u{10FFFF}", "\u{FEFF}"]
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0..<12, using: &rng) {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0:
                // Any scalar (surrogate code points are not scalars and are skipped).
                if let s = Unicode.Scalar(UInt32.random(in: 0...0x10FFFF, using: &rng)) { scalars.append(s) }
            case 1:
                scalars.append(pool.randomElement(using: &rng)!)
            default:
                scalars.append(Unicode.Scalar(UInt8.random(in: 0x20...0x7E, using: &rng)))
            }
        }
        if !wild { scalars.removeAll { $0 == "\u{FEFF}" } }
        return String(scalars)
    }
}

/// Stricter than `==`: the same cases (an int is not a double), the same key
/// order, doubles bit for bit.
public func identical(_ a: Value, _ b: Value) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case let (.bool(x), .bool(y)): return x == y
    case let (.int(x), .int(y)): return x == y
    case let (.double(x), .double(y)): return x.bitPattern == y.bitPattern
    case let (.string(x), .string(y)): return x.utf8.elementsEqual(y.utf8)
    case let (.array(x), .array(y)):
        return x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
    case let (.object(x), .object(y)):
        return x.keys.elementsEqual(y.keys) && zip(x.values, y.values).allSatisfy { identical($0, $1) }
    default: return false
    }
}
