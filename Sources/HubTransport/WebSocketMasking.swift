import Foundation

/// Client-side masking (RFC 6455 section 5.3): fresh keys from the system's strong random
/// source, and the XOR that masks (and unmasks) a payload with one.
struct WebSocketMasking {
    private var keys = [UInt32](repeating: 0, count: 64)
    private var keysLeft = 0

    init() {}

    /// A fresh masking key (drawn 64 keys per `arc4random_buf` call).
    mutating func nextKey() -> UInt32 {
        if keysLeft == 0 {
            keys.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
            keysLeft = keys.count
        }
        keysLeft -= 1
        return keys[keysLeft]
    }

    /// XORs `storage[start...]` with `key` (its bytes in network order, as the frame
    /// header carries it), eight bytes at a time.
    static func apply(key: UInt32, to storage: inout [UInt8], from start: Int) {
        storage.withUnsafeMutableBytes { buffer in
            apply(key: key, to: UnsafeMutableRawBufferPointer(rebasing: buffer[start...]))
        }
    }

    /// XORs `bytes` with `key` (its bytes in network order), eight bytes at a time.
    static func apply(key: UInt32, to bytes: UnsafeMutableRawBufferPointer) {
        // Byte `i` of the key as sent on the wire (big-endian order of `key`).
        @inline(__always) func keyByte(_ index: Int) -> UInt8 {
            UInt8(truncatingIfNeeded: key >> UInt32(24 - 8 * (index & 3)))
        }
        guard let payload = bytes.baseAddress else { return }
        // The key repeated over eight bytes, in memory order whatever the endianness.
        var wideKey: UInt64 = 0
        withUnsafeMutableBytes(of: &wideKey) { wide in
            for index in 0..<8 { wide[index] = keyByte(index) }
        }
        let count = bytes.count
        var offset = 0
        while offset + 8 <= count {
            let word = payload.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            payload.storeBytes(of: word ^ wideKey, toByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        while offset < count {
            let byte = payload.load(fromByteOffset: offset, as: UInt8.self)
            payload.storeBytes(of: byte ^ keyByte(offset), toByteOffset: offset, as: UInt8.self)
            offset += 1
        }
    }
}
