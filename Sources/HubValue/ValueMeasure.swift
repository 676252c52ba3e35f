/// How deep and how large a ``Value`` is, measured without recursion.
///
/// The hub bounds every value built inside a pipeline (an expression's result, an
/// accumulator, a collected array) by depth and size, because everything that walks a
/// value recursively (the JSON writer, `==`, hashing, and Swift's own release of a nested
/// enum) uses stack in proportion to its depth, and memory and CPU in proportion to its
/// size. ``Value/measure(maxDepth:maxBytes:)`` stops as soon as either bound is passed,
/// so measuring costs at most the bound, even for a value whose parts are shared (a value
/// such as `{a: x, b: x}` built 40 times over is small in memory but astronomically large
/// once written out: it is measured as written out).
public struct ValueMeasure: Hashable, Sendable {
    /// The nesting depth: 0 for a scalar, 1 for `[]` or `[1]`, 2 for `[[1]]` (the JSON
    /// reader's count: ``Value/defaultMaxDepth``).
    public var depth: Int
    /// The estimated bytes the value occupies (``Value/estimatedBytes``), counting every
    /// shared part each time it appears.
    public var bytes: Int
    /// The values visited (scalars and containers), for charging the work to a budget.
    public var nodes: Int
    /// Whether the walk stopped early because a bound was passed: ``depth`` or ``bytes``
    /// is then only a lower bound, beyond the limit.
    public var exceeded: Bool

    /// A measure.
    public init(depth: Int, bytes: Int, nodes: Int, exceeded: Bool) {
        self.depth = depth
        self.bytes = bytes
        self.nodes = nodes
        self.exceeded = exceeded
    }
}

extension Value {
    /// The bytes a scalar, or a container's own part, is counted for: a value's slot
    /// (16 bytes), plus a string's UTF-8, plus 16 per array element and 32 per object
    /// member (key included) beyond their own values. Close to what the value holds in
    /// memory, and never less than its compact JSON.
    @inlinable
    static func ownBytes(_ value: Value) -> Int {
        switch value {
        case .null, .bool, .int, .double: return 16
        case let .string(s): return 16 + s.utf8.count
        case .array: return 32
        case .object: return 48
        }
    }

    /// The estimated memory of this value (see ``ValueMeasure/bytes``), by an iterative
    /// walk of the whole value.
    public var estimatedBytes: Int { measure().bytes }

    /// Measures depth and size with an explicit stack (no recursion), stopping as soon as
    /// the depth passes `maxDepth` or the bytes pass `maxBytes` (then
    /// ``ValueMeasure/exceeded`` is set). The cost is proportional to the part visited.
    public func measure(maxDepth: Int = .max, maxBytes: Int = .max) -> ValueMeasure {
        var result = ValueMeasure(depth: 0, bytes: Value.ownBytes(self), nodes: 1, exceeded: false)
        if result.bytes > maxBytes {
            result.exceeded = true
            return result
        }
        switch self {
        case .array, .object: break
        default: return result
        }
        // Containers still to visit, with their depth.
        var pending: [(Value, Int)] = [(self, 1)]
        while let (container, depth) = pending.popLast() {
            if depth > result.depth {
                result.depth = depth
                if depth > maxDepth {
                    result.exceeded = true
                    return result
                }
            }
            switch container {
            case let .array(elements):
                for element in elements {
                    result.nodes += 1
                    result.bytes += Value.ownBytes(element)
                    if result.bytes > maxBytes {
                        result.exceeded = true
                        return result
                    }
                    switch element {
                    case .array, .object: pending.append((element, depth + 1))
                    default: break
                    }
                }
            case let .object(members):
                for (key, member) in members {
                    result.nodes += 1
                    result.bytes += Value.ownBytes(member) + 16 + key.utf8.count
                    if result.bytes > maxBytes {
                        result.exceeded = true
                        return result
                    }
                    switch member {
                    case .array, .object: pending.append((member, depth + 1))
                    default: break
                    }
                }
            default:
                break
            }
        }
        return result
    }

    /// The deepest nesting (``ValueMeasure/depth``), by an iterative walk.
    public var depth: Int { measure().depth }
}
