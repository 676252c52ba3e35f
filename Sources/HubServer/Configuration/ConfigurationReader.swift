import HubRegistry
import HubValue
import HubWire
import Yams

/// Reads typed values out of a composed YAML document (Yams' `Node` API, whose
/// nodes carry their start marks), turning every mistake into a
/// ``ConfigurationError`` at the offending node.
///
/// Plain scalars resolve by the YAML 1.2 core schema: `null`/`~`/empty, `true`/
/// `false` (also `True`, `TRUE`...), decimal, `0x` and `0o` integers, and
/// decimal floats. `yes`, `no`, `on` and `off` are strings. Quoted and block
/// scalars, and scalars tagged `!!str`, are always strings.
struct ConfigurationReader {
    /// The file name errors carry.
    let file: String
    /// The file's text, split into lines (for locating the content of block scalars).
    let lines: [Substring]

    /// A mapping entry: its key, the key's node, the value's node, and the key path.
    struct Entry {
        let key: String
        let keyNode: Node
        let value: Node
        let path: String
    }

    /// A reader of `text`, which errors name `file`.
    init(file: String, text: String) {
        self.file = file
        lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    }

    // MARK: Errors

    /// An error at `node` (or at the start of the file), under `path`.
    func error(_ node: Node?, _ path: String, _ message: String) -> ConfigurationError {
        let mark = node?.mark
        return ConfigurationError(file: file, line: mark?.line ?? 1, column: mark?.column ?? 1, path: path, message: message)
    }

    /// `path.key`, or `key` at the top.
    static func join(_ path: String, _ key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    /// How a node is described in "got ..." messages.
    func describe(_ node: Node) -> String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a sequence"
        case .scalar(let scalar):
            switch resolve(scalar) {
            case .null: return "null"
            case .string(let text): return "\"\(text)\""
            default: return scalar.string
            }
        }
    }

    // MARK: Mappings

    /// Whether `node` is an empty value (`key:` with nothing after it, or `null`).
    func isNull(_ node: Node) -> Bool {
        if case .scalar(let scalar) = node, case .null = resolve(scalar) { return true }
        return false
    }

    /// The entries of a mapping, in order, with string keys and no duplicates.
    /// An empty value counts as an empty mapping.
    func entries(_ node: Node, _ path: String) throws(ConfigurationError) -> [Entry] {
        if isNull(node) { return [] }
        guard case .mapping(let mapping) = node else {
            throw error(node, path, "expected a mapping (got \(describe(node)))")
        }
        var result: [Entry] = []
        var seen: [String: Node] = [:]
        for (keyNode, value) in mapping {
            guard case .scalar(let scalar) = keyNode else {
                throw error(keyNode, path, "a key must be a string (got \(describe(keyNode)))")
            }
            let key = scalar.string
            let keyPath = ConfigurationReader.join(path, key)
            if let first = seen[key] {
                throw error(keyNode, keyPath, "duplicate key '\(key)' (first at \(position(first)))")
            }
            seen[key] = keyNode
            result.append(Entry(key: key, keyNode: keyNode, value: value, path: keyPath))
        }
        return result
    }

    /// The entries of a mapping whose keys must be among `allowed`, by key.
    func fields(_ node: Node, _ path: String, allowed: [String]) throws(ConfigurationError) -> [String: Entry] {
        var result: [String: Entry] = [:]
        for entry in try entries(node, path) {
            guard allowed.contains(entry.key) else {
                throw error(entry.keyNode, entry.path, "unknown key '\(entry.key)'; valid keys: \(allowed.joined(separator: ", "))")
            }
            result[entry.key] = entry
        }
        return result
    }

    /// The items of a sequence with their paths (`path[i]`). An empty value counts as an empty sequence.
    func items(_ node: Node, _ path: String) throws(ConfigurationError) -> [(node: Node, path: String)] {
        if isNull(node) { return [] }
        guard case .sequence(let sequence) = node else {
            throw error(node, path, "expected a sequence (got \(describe(node)))")
        }
        return sequence.enumerated().map { (node: $0.element, path: "\(path)[\($0.offset)]") }
    }

    /// `line:column` of `node`.
    func position(_ node: Node) -> String {
        guard let mark = node.mark else { return "1:1" }
        return "\(mark.line):\(mark.column)"
    }

    // MARK: Scalars

    /// A string: any non-null scalar, as written.
    func string(_ node: Node, _ path: String) throws(ConfigurationError) -> String {
        guard case .scalar(let scalar) = node, !isNull(node) else {
            throw error(node, path, "expected a string (got \(describe(node)))")
        }
        return scalar.string
    }

    /// `true` or `false`.
    func bool(_ node: Node, _ path: String) throws(ConfigurationError) -> Bool {
        guard case .scalar(let scalar) = node, case .bool(let value) = resolve(scalar) else {
            throw error(node, path, "expected true or false (got \(describe(node)))")
        }
        return value
    }

    /// An integer in `range`.
    func int(_ node: Node, _ path: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        let expected = range.upperBound == Int.max
            ? "an integer ≥ \(range.lowerBound)"
            : "an integer between \(range.lowerBound) and \(range.upperBound)"
        guard case .scalar(let scalar) = node, case .int(let value) = resolve(scalar) else {
            throw error(node, path, "expected \(expected) (got \(describe(node)))")
        }
        guard let value, let int = Int(exactly: value), range.contains(int) else {
            throw error(node, path, "expected \(expected) (got \(scalar.string))")
        }
        return int
    }

    /// A duration written as a number and a unit: `ns`, `us`, `ms`, `s`, `m` or `h` (`"10ms"`, `"1.5s"`), at least `minimum`.
    func duration(_ node: Node, _ path: String, minimum: Duration = .zero) throws(ConfigurationError) -> Duration {
        let expected = "expected a duration such as \"10ms\", \"5s\" or \"1m\" (units ns, us, ms, s, m, h)"
        guard case .scalar(let scalar) = node, !isNull(node) else {
            throw error(node, path, "\(expected) (got \(describe(node)))")
        }
        guard let duration = ConfigurationReader.parseDuration(scalar.string) else {
            throw error(node, path, "\(expected) (got \"\(scalar.string)\")")
        }
        guard duration >= minimum else {
            throw error(node, path, "expected a duration of at least \(minimum) (got \"\(scalar.string)\")")
        }
        return duration
    }

    /// A value of a string enumeration.
    func choice<T: RawRepresentable>(_ node: Node, _ path: String, _ cases: [T]) throws(ConfigurationError) -> T
    where T.RawValue == String {
        let names = cases.map(\.rawValue)
        guard case .scalar(let scalar) = node, names.contains(scalar.string), let value = T(rawValue: scalar.string) else {
            throw error(node, path, "expected one of \(names.joined(separator: ", ")) (got \(describe(node)))")
        }
        return value
    }

    /// A hub name (subject, trigger, pipeline).
    func name(_ text: String, at node: Node, _ path: String) throws(ConfigurationError) -> String {
        if text.hasPrefix("$") {
            throw error(node, path, "invalid name '\(text)': names starting with '$' are the broker's system subjects")
        }
        if let problem = HubName.problem(with: text) {
            throw error(node, path, "invalid name '\(text)': \(problem)")
        }
        return text
    }

    // MARK: Values

    /// Any YAML value as a ``Value``: scalars by the core schema (integers
    /// exact, 64 bits), sequences as arrays, mappings as objects in key order.
    func value(_ node: Node, _ path: String) throws(ConfigurationError) -> Value {
        switch node {
        case .scalar(let scalar):
            switch resolve(scalar) {
            case .null: return .null
            case .bool(let value): return .bool(value)
            case .int(let value?): return .int(value)
            case .int(nil): throw error(node, path, "integer \(scalar.string) does not fit in 64 bits")
            case .double(let value?): return .double(value)
            case .double(nil): throw error(node, path, "\(scalar.string) is not a finite number (JSON has no infinity or NaN)")
            case .string(let text): return .string(text)
            }
        case .sequence:
            var array: [Value] = []
            for item in try items(node, path) { array.append(try value(item.node, item.path)) }
            return .array(array)
        case .mapping:
            var object = Value.Object()
            for entry in try entries(node, path) { object[entry.key] = try value(entry.value, entry.path) }
            return .object(object)
        }
    }

    /// The node at `path` (mapping keys and sequence indexes) inside `node`, and its key path:
    /// the key node for a mapping entry (where a misspelt keyword is), as deep as the path
    /// goes in the file.
    func locate(_ path: [String], in node: Node, under keyPath: String) -> (Node, String) {
        var current = node
        var located = node
        var currentPath = keyPath
        for component in path {
            switch current {
            case .mapping(let mapping):
                guard let pair = mapping.first(where: { $0.key.string == component }) else { return (located, currentPath) }
                currentPath = ConfigurationReader.join(currentPath, component)
                located = pair.key
                current = pair.value
            case .sequence(let sequence):
                guard let index = Int(component), index >= 0, index < sequence.count else { return (located, currentPath) }
                currentPath += "[\(index)]"
                current = sequence[index]
                located = current
            case .scalar:
                return (located, currentPath)
            }
        }
        return (located, currentPath)
    }

    /// A node as a ``StorageSettings/Scalar`` for the module that reads a `storage` section.
    func storageScalar(_ node: Node) -> StorageSettings.Scalar {
        guard case .scalar(let scalar) = node else { return .other(describe(node)) }
        switch resolve(scalar) {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .int, .double: return .number(scalar.string)
        case .string(let text): return .string(text)
        }
    }

    /// What a scalar stands for.
    enum Resolved {
        case null
        case bool(Bool)
        /// `nil`: an integer that does not fit in 64 bits.
        case int(Int64?)
        /// `nil`: infinity or NaN.
        case double(Double?)
        case string(String)
    }

    /// Resolves a scalar by the YAML 1.2 core schema.
    func resolve(_ scalar: Node.Scalar) -> Resolved {
        let text = scalar.string
        guard scalar.style == .plain || scalar.style == .any, scalar.tag.description != Tag.Name.str.rawValue else { return .string(text) }
        switch text {
        case "", "~", "null", "Null", "NULL": return .null
        case "true", "True", "TRUE": return .bool(true)
        case "false", "False", "FALSE": return .bool(false)
        case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN":
            return .double(nil)
        default: break
        }
        if let int = ConfigurationReader.integer(text) { return int }
        if ConfigurationReader.isFloat(text), let double = Double(text), double.isFinite { return .double(double) }
        return .string(text)
    }

    /// `[-+]?[0-9]+`, `0x[0-9a-fA-F]+` or `0o[0-7]+`, exactly (nil inside when out of range).
    static func integer(_ text: String) -> Resolved? {
        let utf8 = Array(text.utf8)
        func digits(_ slice: ArraySlice<UInt8>, radix: Int) -> Bool {
            !slice.isEmpty && slice.allSatisfy { Int(String(UnicodeScalar($0)), radix: radix) != nil }
        }
        if utf8.count > 2, utf8[0] == UInt8(ascii: "0"), utf8[1] == UInt8(ascii: "x") || utf8[1] == UInt8(ascii: "o") {
            let radix = utf8[1] == UInt8(ascii: "x") ? 16 : 8
            guard digits(utf8[2...], radix: radix) else { return nil }
            return .int(Int64(String(text.dropFirst(2)), radix: radix))
        }
        let body = utf8.first == UInt8(ascii: "-") || utf8.first == UInt8(ascii: "+") ? utf8[1...] : utf8[0...]
        guard digits(body, radix: 10) else { return nil }
        return .int(Int64(text.hasPrefix("+") ? String(text.dropFirst()) : text))
    }

    /// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
    static func isFloat(_ text: String) -> Bool {
        var bytes = Array(text.utf8)[...]
        func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }
        if let first = bytes.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
        let whole = bytes.prefix(while: isDigit)
        bytes = bytes.dropFirst(whole.count)
        var fraction = 0
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            fraction = bytes.prefix(while: isDigit).count
            bytes = bytes.dropFirst(fraction)
        }
        guard whole.count + fraction > 0 else { return false }
        if let e = bytes.first, e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if let sign = bytes.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") { bytes = bytes.dropFirst() }
            let exponent = bytes.prefix(while: isDigit).count
            guard exponent > 0 else { return false }
            bytes = bytes.dropFirst(exponent)
        }
        return bytes.isEmpty
    }

    /// `10ms`, `1.5s`, `2m`... as a Duration; nil when not of that form.
    static func parseDuration(_ text: String) -> Duration? {
        let units: [(String, Double)] = [("ns", 1e-9), ("us", 1e-6), ("µs", 1e-6), ("ms", 1e-3), ("s", 1), ("m", 60), ("h", 3600)]
        for (unit, seconds) in units where text.hasSuffix(unit) {
            let number = String(text.dropLast(unit.count))
            // "ms" also ends with "s": the longer units come first, and the rest must be a plain number.
            guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                  number.filter({ $0 == "." }).count <= 1, number.first != ".", number.last != ".",
                  let value = Double(number) else { return nil }
            if unit == "ns", let nanoseconds = Int64(number) { return .nanoseconds(nanoseconds) }
            return .nanoseconds(Int64((value * seconds * 1e9).rounded()))
        }
        return nil
    }

    // MARK: Block scalars

    /// Where each run of a pipeline's text lies in the file, for mapping a
    /// position in the text to one in the file.
    func segments(of node: Node) -> [BrokerConfiguration.SourceSegment] {
        guard case .scalar(let scalar) = node, let mark = scalar.mark else { return [] }
        switch scalar.style {
        case .literal, .folded:
            // The content starts on the line after the indicator; every line
            // keeps its own position, and each line break is one character
            // of the text (a newline, or the space a folded break becomes).
            var segments: [BrokerConfiguration.SourceSegment] = []
            var offset = 0
            var indent: Int?
            var index = mark.line // 0-based index of the line after the indicator
            while index < lines.count, offset <= scalar.string.count {
                let line = lines[index]
                let leading = line.prefix(while: { $0 == " " }).count
                let blank = line.allSatisfy { $0 == " " || $0 == "\r" }
                if indent == nil, !blank { indent = leading }
                if let indent, !blank, leading < indent { break }
                let column = (indent ?? leading) + 1
                segments.append(BrokerConfiguration.SourceSegment(offset: offset, line: index + 1, column: column))
                offset += Swift.max(0, line.unicodeScalars.count - (indent ?? leading)) + 1
                index += 1
            }
            return segments
        case .singleQuoted, .doubleQuoted:
            return [BrokerConfiguration.SourceSegment(offset: 0, line: mark.line, column: mark.column + 1)]
        default:
            return [BrokerConfiguration.SourceSegment(offset: 0, line: mark.line, column: mark.column)]
        }
    }
}
