/// The rules for the names of subjects, pipelines and triggers (PROTOCOL.md §3,
/// "Names"): `[A-Za-z_][A-Za-z0-9_.]*`, at most ``maxLength`` bytes.
///
/// The wire decoder checks every name with it; the hub reuses it for names
/// that come from configuration or pipeline text.
public enum HubName {
    /// The longest valid name, in bytes (names are ASCII, so also in characters).
    public static let maxLength = 256

    /// The system subjects (PROTOCOL.md §3, "System subjects"): the only names that may
    /// start with `$`, subscribable by clients with the `admin` permission, written only
    /// by the broker.
    public static let systemNames: Set<String> = ["$sys.stats", "$sys.connections", "$sys.events"]

    /// The prefix of the system subjects' names.
    public static let systemPrefix = "$sys."

    /// Whether `name` is one of the ``systemNames``.
    public static func isSystem(_ name: String) -> Bool {
        name.hasPrefix(systemPrefix) && systemNames.contains(name)
    }

    /// Whether `name` is a valid hub name.
    public static func isValid(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { isValid(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// Whether the UTF-8 bytes `utf8` spell a valid hub name (or a system subject's).
    public static func isValid(utf8: UnsafeRawBufferPointer) -> Bool {
        if utf8.first == UInt8(ascii: "$") {
            return systemNames.contains(String(decoding: utf8, as: UTF8.self))
        }
        guard let first = utf8.first, utf8.count <= maxLength, isStart(first) else { return false }
        for byte in utf8.dropFirst() where !isContinuation(byte) { return false }
        return true
    }

    /// Why `name` is not valid (for error messages), or `nil` when it is.
    public static func problem(with name: String) -> String? {
        if name.isEmpty { return "a name cannot be empty" }
        if name.utf8.count > maxLength { return "a name is at most \(maxLength) bytes long" }
        if name.hasPrefix("$"), !isValid(name) {
            return "only the system subjects \(systemNames.sorted().joined(separator: ", ")) start with '$'"
        }
        if !isValid(name) { return "a name must match [A-Za-z_][A-Za-z0-9_.]*" }
        return nil
    }

    @inline(__always)
    private static func isStart(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z"))
            || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
            || c == UInt8(ascii: "_")
    }

    @inline(__always)
    private static func isContinuation(_ c: UInt8) -> Bool {
        isStart(c) || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: ".")
    }
}
