import HubPipeline
import HubValue

/// Compiles a schema document into ``SchemaNode``s (node 0 is the root), resolving `$ref`s
/// to `#` and `#/$defs/NAME`, and refusing unknown keywords, wrong keyword values,
/// unresolved references and reference cycles that never descend into the value.
struct SchemaCompiler {
    typealias DefinitionError = JSONSchema.DefinitionError

    private let root: Value
    private var nodes: [SchemaNode] = []
    /// `$ref`s to resolve once every node exists: the node, the reference, its path.
    private var references: [(node: Int, target: String, path: [String])] = []
    /// The node of each `$defs` entry, by name.
    private var definitions: [String: Int] = [:]

    init(root: Value) {
        self.root = root
    }

    mutating func compile() throws(DefinitionError) -> [SchemaNode] {
        _ = try node(root, path: [], depth: 0)
        for reference in references {
            let target: Int
            if reference.target == "#" {
                target = 0
            } else if reference.target.hasPrefix("#/$defs/"), let found = definitions[Self.unescape(String(reference.target.dropFirst(8)))] {
                target = found
            } else {
                throw DefinitionError(
                    message: "$ref '\(reference.target)' does not resolve: use '#' or '#/$defs/NAME' of this schema",
                    path: reference.path)
            }
            nodes[reference.node].ref = target
        }
        try refuseCyclesWithoutDescent()
        return nodes
    }

    /// `~1` and `~0` of a JSON pointer segment.
    private static func unescape(_ segment: String) -> String {
        segment.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
    }

    private static func pointer(_ path: [String]) -> String {
        "#" + path.map { "/" + $0.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1") }.joined()
    }

    private mutating func node(_ schema: Value, path: [String], depth: Int) throws(DefinitionError) -> Int {
        guard depth <= JSONSchema.maximumDepth else {
            throw DefinitionError(message: "the schema is nested too deeply (the limit is \(JSONSchema.maximumDepth))", path: path)
        }
        let index = nodes.count
        nodes.append(SchemaNode(schemaPath: Self.pointer(path)))
        switch schema {
        case .bool(let accepts):
            nodes[index].rejectsEverything = !accepts
            return index
        case .object(let members):
            var node = nodes[index]
            for (key, value) in members {
                let at = path + [key]
                try keyword(key, value, into: &node, index: index, path: at, depth: depth)
            }
            nodes[index] = node
            return index
        default:
            throw DefinitionError(message: "a schema is an object or a boolean, got \(Self.typeName(value: schema))", path: path)
        }
    }

    private mutating func keyword(
        _ key: String, _ value: Value, into node: inout SchemaNode, index: Int, path: [String], depth: Int
    ) throws(DefinitionError) {
        func fail(_ message: String) -> DefinitionError { DefinitionError(message: message, path: path) }
        func count() throws(DefinitionError) -> Int {
            guard let n = value.intValue ?? value.doubleValue.flatMap({ $0.rounded() == $0 ? Int64(exactly: $0) : nil }), n >= 0,
                  n <= Int64(Int32.max) else {
                throw fail("\(key) needs a non-negative integer, got \(value.jsonString())")
            }
            return Int(n)
        }
        func number() throws(DefinitionError) -> Value {
            switch value {
            case .int: return value
            case .double(let d) where d.isFinite: return value
            default: throw fail("\(key) needs a number, got \(value.jsonString())")
            }
        }
        func schemas() throws(DefinitionError) -> [Int] {
            guard case .array(let list) = value, !list.isEmpty else { throw fail("\(key) needs a non-empty array of schemas") }
            var result: [Int] = []
            for (i, item) in list.enumerated() { result.append(try self.node(item, path: path + [String(i)], depth: depth + 1)) }
            return result
        }
        switch key {
        case "type":
            var names: [Value] = []
            switch value {
            case .string: names = [value]
            case .array(let list) where !list.isEmpty: names = list
            default: throw fail("type needs a type name or a non-empty array of them, got \(value.jsonString())")
            }
            var types: [SchemaNode.TypeName] = []
            for name in names {
                guard case .string(let text) = name, let type = SchemaNode.TypeName(rawValue: text) else {
                    throw fail("unknown type \(name.jsonString()) (types: \(SchemaNode.TypeName.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                types.append(type)
            }
            node.types = types
        case "enum":
            guard case .array(let list) = value, !list.isEmpty else { throw fail("enum needs a non-empty array of values") }
            node.enumValues = list
        case "const":
            node.constValue = value
        case "properties":
            guard case .object(let members) = value else { throw fail("properties needs an object of schemas") }
            for (name, schema) in members {
                node.properties.append((name, try self.node(schema, path: path + [name], depth: depth + 1)))
            }
        case "required":
            guard case .array(let list) = value else { throw fail("required needs an array of property names") }
            for item in list {
                guard case .string(let name) = item else { throw fail("required needs an array of property names, got \(item.jsonString())") }
                node.required.append(name)
            }
        case "additionalProperties":
            node.additionalProperties = try self.node(value, path: path, depth: depth + 1)
        case "items":
            node.items = try self.node(value, path: path, depth: depth + 1)
        case "prefixItems":
            node.prefixItems = try schemas()
        case "minLength": node.minLength = try count()
        case "maxLength": node.maxLength = try count()
        case "minItems": node.minItems = try count()
        case "maxItems": node.maxItems = try count()
        case "minimum": node.minimum = try number()
        case "maximum": node.maximum = try number()
        case "exclusiveMinimum":
            if case .bool = value { throw fail("exclusiveMinimum is a number in this JSON Schema version (2020-12), not a boolean") }
            node.exclusiveMinimum = try number()
        case "exclusiveMaximum":
            if case .bool = value { throw fail("exclusiveMaximum is a number in this JSON Schema version (2020-12), not a boolean") }
            node.exclusiveMaximum = try number()
        case "pattern":
            guard case .string(let text) = value else { throw fail("pattern needs a regular expression (a string)") }
            do throws(LinearRegex.SyntaxError) {
                node.pattern = try LinearRegex(text)
                node.patternSource = text
            } catch {
                throw fail("invalid pattern: \(error.message) (at character \(error.offset + 1) of the pattern)")
            }
        case "allOf": node.allOf = try schemas()
        case "anyOf": node.anyOf = try schemas()
        case "oneOf": node.oneOf = try schemas()
        case "not": node.not = try self.node(value, path: path, depth: depth + 1)
        case "$ref":
            guard case .string(let target) = value else { throw fail("$ref needs a string such as \"#/$defs/item\"") }
            // Resolved once every node exists.
            references.append((index, target, path))
        case "$defs":
            guard path.count == 1 else { throw fail("$defs is only read at the root of the schema") }
            guard case .object(let members) = value else { throw fail("$defs needs an object of schemas") }
            for (name, schema) in members {
                definitions[name] = try self.node(schema, path: path + [name], depth: depth + 1)
            }
        default:
            if JSONSchema.annotations.contains(key) { return }
            let suggestion = Self.closest(to: key).map { " (did you mean '\($0)'?)" } ?? ""
            throw fail("unknown keyword '\(key)'\(suggestion); the keywords supported are \(JSONSchema.keywords.joined(separator: ", "))")
        }
    }

    /// Refuses `$ref`, `allOf`, `anyOf`, `oneOf` and `not` chains that come back to a schema
    /// without going into a property or an item: checking a value would never end.
    private func refuseCyclesWithoutDescent() throws(DefinitionError) {
        var state = [UInt8](repeating: 0, count: nodes.count)  // 0 new, 1 on the path, 2 done
        func sameValueEdges(_ n: Int) -> [Int] {
            let node = nodes[n]
            return node.allOf + node.anyOf + node.oneOf + (node.not.map { [$0] } ?? []) + (node.ref.map { [$0] } ?? [])
        }
        for start in nodes.indices where state[start] == 0 {
            var stack: [(node: Int, next: Int)] = [(start, 0)]
            state[start] = 1
            while let top = stack.last {
                let edges = sameValueEdges(top.node)
                if top.next < edges.count {
                    stack[stack.count - 1].next += 1
                    let target = edges[top.next]
                    if state[target] == 1 {
                        throw DefinitionError(
                            message: "'\(nodes[top.node].schemaPath)' refers back to '\(nodes[target].schemaPath)' without going into a property or an item: a value would be checked forever",
                            path: [])
                    }
                    if state[target] == 0 {
                        state[target] = 1
                        stack.append((target, 0))
                    }
                } else {
                    state[top.node] = 2
                    stack.removeLast()
                }
            }
        }
    }

    static func typeName(value: Value) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "boolean"
        case .int: return "integer"
        case .double(let d): return d.rounded() == d && d.isFinite ? "integer" : "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// The known keyword closest to a misspelt one (at most two edits away).
    static func closest(to word: String) -> String? {
        func distance(_ a: [Character], _ b: [Character]) -> Int {
            var previous = Array(0...b.count)
            for (i, x) in a.enumerated() {
                var current = [i + 1]
                for (j, y) in b.enumerated() {
                    current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
                }
                previous = current
            }
            return previous[b.count]
        }
        let scored = JSONSchema.keywords.map { ($0, distance(Array(word.lowercased()), Array($0.lowercased()))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= 2 else { return nil }
        return best.0
    }
}
