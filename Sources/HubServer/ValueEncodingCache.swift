import HubValue

/// Encodes a value's JSON once when the same value is delivered to many
/// subscribers in a row (a subject's fan-out), PROTOCOL's "encode once".
///
/// Identity, not equality, decides a hit: a string, array or object is the
/// same value when it shares the same storage. The cache keeps the value it
/// encoded, so that storage cannot be freed and reused while cached, and
/// copy-on-write guarantees shared storage is never mutated in place. Scalars
/// and short strings are cheap to encode and are not cached. One cache serves
/// every session of an event loop.
public final class ValueEncodingCache {
    // @exclusivity(unchecked) on the hot fields below: this object is confined to its
    // event loop and nothing re-enters it while one of these accesses is open, so the dynamic
    // check (a runtime call per access, the release builds once skipped it by a flag) only costs.
    @exclusivity(unchecked) private var cachedValue: Value = .null
    @exclusivity(unchecked) private var cachedKey: (UnsafeRawPointer, UnsafeRawPointer?, Int)?
    /// The JSON last handed out by ``encoded(_:)``, in memory the cache owns (no array to
    /// retain and release on every delivery of a fan-out).
    @exclusivity(unchecked) private var bytes: UnsafeMutableRawPointer?
    @exclusivity(unchecked) private var byteCount = 0
    @exclusivity(unchecked) private var byteCapacity = 0
    /// Whether ``bytes`` hold the cached value's JSON (not an uncacheable value's).
    @exclusivity(unchecked) private var bytesAreCached = false
    @exclusivity(unchecked) private var scratch: [UInt8] = []
    /// Values served from the cache.
    @exclusivity(unchecked) public private(set) var hits = 0
    /// Values encoded.
    @exclusivity(unchecked) public private(set) var misses = 0

    /// An empty cache.
    public init() {}

    deinit {
        bytes?.deallocate()
    }

    /// Appends `value`'s JSON to `buffer`, from the cache when `value` is the one encoded last.
    public func append(_ value: Value, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: encoded(value))
    }

    /// `value`'s JSON: the cached bytes when `value` is the one encoded last (or is
    /// cacheable and now encoded), else the bytes of a fresh encoding. The bytes stay
    /// valid until the next call on the cache.
    @inline(__always)
    public func encoded(_ value: Value) -> UnsafeRawBufferPointer {
        guard let key = ValueEncodingCache.identity(of: value) else {
            store(value)
            bytesAreCached = false
            return UnsafeRawBufferPointer(start: bytes, count: byteCount)
        }
        if bytesAreCached, let cachedKey, cachedKey == key {
            hits += 1
        } else {
            misses += 1
            store(value)
            bytesAreCached = true
            cachedValue = value
            cachedKey = key
        }
        return UnsafeRawBufferPointer(start: bytes, count: byteCount)
    }

    /// Calls `body` with `value`'s JSON (see ``encoded(_:)``).
    public func withEncoded<R>(_ value: Value, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        body(encoded(value))
    }

    /// Encodes `value` into ``bytes``.
    private func store(_ value: Value) {
        scratch.removeAll(keepingCapacity: true)
        value.writeJSON(into: &scratch)
        if scratch.count > byteCapacity {
            bytes?.deallocate()
            byteCapacity = max(scratch.count, 256)
            bytes = UnsafeMutableRawPointer.allocate(byteCount: byteCapacity, alignment: 16)
        }
        byteCount = scratch.count
        scratch.withUnsafeBytes { source in
            if let base = source.baseAddress { bytes!.copyMemory(from: base, byteCount: source.count) }
        }
    }

    /// Forgets the cached value (and releases its storage).
    public func clear() {
        cachedValue = .null
        cachedKey = nil
        bytesAreCached = false
        bytes?.deallocate()
        bytes = nil
        byteCount = 0
        byteCapacity = 0
        scratch = []
    }

    /// The storage identity of a string, array or object worth caching.
    private static func identity(of value: Value) -> (UnsafeRawPointer, UnsafeRawPointer?, Int)? {
        switch value {
        case .string(let string):
            // Strings of up to 15 UTF-8 bytes live inline, without storage of their own.
            guard string.utf8.count > 15 else { return nil }
            return string.utf8.withContiguousStorageIfAvailable { buffer in
                buffer.baseAddress.map { (UnsafeRawPointer($0), nil, buffer.count) }
            } ?? nil
        case .array(let array):
            guard !array.isEmpty else { return nil }
            return array.withUnsafeBufferPointer { buffer in
                buffer.baseAddress.map { (UnsafeRawPointer($0), nil, buffer.count) }
            }
        case .object(let object):
            guard !object.isEmpty else { return nil }
            let keys = object.keys.elements.withUnsafeBufferPointer { $0.baseAddress.map(UnsafeRawPointer.init) }
            let values = object.values.elements.withUnsafeBufferPointer { $0.baseAddress.map(UnsafeRawPointer.init) }
            guard let keys else { return nil }
            return (keys, values, object.count)
        default:
            return nil
        }
    }
}

private func == (lhs: (UnsafeRawPointer, UnsafeRawPointer?, Int), rhs: (UnsafeRawPointer, UnsafeRawPointer?, Int)) -> Bool {
    lhs.0 == rhs.0 && lhs.1 == rhs.1 && lhs.2 == rhs.2
}
