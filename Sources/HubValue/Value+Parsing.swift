extension Value {
    /// The default limit on nesting of arrays and objects accepted by the parser.
    public static let defaultMaxDepth = 512

    /// Parses one JSON document (RFC 8259, strict) from raw bytes.
    ///
    /// This is the core every other `parse` overload ends in; the transport
    /// hands its receive buffer straight to it. The bytes are only read during
    /// the call. Leading and trailing whitespace is allowed; anything else after
    /// the value is ``JSONError/Code/trailingCharacters``. Arrays and objects may
    /// nest at most `maxDepth` levels (deeper input is
    /// ``JSONError/Code/tooDeep``; the parser recurses once per level, so keep
    /// the limit in the hundreds or low thousands).
    ///
    /// Integers that fit in `Int64` become ``Value/int(_:)``; any other number
    /// becomes a finite ``Value/double(_:)`` (a number too large for a finite
    /// `Double` is ``JSONError/Code/invalidNumber``). Duplicate keys: the last
    /// value wins, at the position of the first.
    public static func parse(_ buffer: UnsafeRawBufferPointer, maxDepth: Int = Value.defaultMaxDepth) throws(JSONError) -> Value {
        guard let base = buffer.baseAddress, buffer.count > 0 else {
            throw JSONError(code: .unexpectedEnd, offset: 0, reason: "expected a value, found the end of the input")
        }
        var parser = JSONParser(
            bytes: base.assumingMemoryBound(to: UInt8.self),
            count: buffer.count,
            maxDepth: maxDepth
        )
        return try parser.parseDocument()
    }

    /// Parses one JSON document from a collection of bytes (`[UInt8]`, `Data`,
    /// a slice, ...). Contiguous collections are read in place.
    public static func parse(_ bytes: some Collection<UInt8>, maxDepth: Int = Value.defaultMaxDepth) throws(JSONError) -> Value {
        let direct: Result<Value, JSONError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONError) -> Value in
                try Value.parse(UnsafeRawBufferPointer(buffer), maxDepth: maxDepth)
            }
        }
        if let direct { return try direct.get() }
        let copy = Array(bytes)
        let result = copy.withUnsafeBytes { buffer in
            Result { () throws(JSONError) -> Value in
                try Value.parse(buffer, maxDepth: maxDepth)
            }
        }
        return try result.get()
    }

    /// Parses one JSON document from the UTF-8 of `text`.
    public static func parse(_ text: String, maxDepth: Int = Value.defaultMaxDepth) throws(JSONError) -> Value {
        var text = text
        let result = text.withUTF8 { utf8 in
            Result { () throws(JSONError) -> Value in
                try Value.parse(UnsafeRawBufferPointer(utf8), maxDepth: maxDepth)
            }
        }
        return try result.get()
    }
}
