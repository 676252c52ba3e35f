import HubPipeline
import HubValue

/// Checks one value against compiled ``SchemaNode``s, reporting the first problem with its
/// path in the value, within a budget of steps (one per schema applied to one value, and
/// the pattern matcher's own steps).
struct SchemaChecker {
    typealias ValidationError = JSONSchema.ValidationError

    /// A step of a path in the value: a member name or an index.
    enum PathComponent {
        case member(String)
        case index(Int)
    }

    private let nodes: [SchemaNode]
    private var steps: Int

    init(nodes: [SchemaNode], steps: Int) {
        self.nodes = nodes
        self.steps = steps
    }

    /// `.`, `.title`, `.todos[0].title`, `.["a key"]`.
    static func render(_ path: [PathComponent]) -> String {
        if path.isEmpty { return "." }
        var out = ""
        for component in path {
            switch component {
            case .member(let name):
                if let first = name.unicodeScalars.first, first.properties.isAlphabetic || first == "_",
                   name.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" }) {
                    out += "." + name
                } else {
                    out += ".[" + Value.string(name).jsonString() + "]"
                }
            case .index(let i):
                out += out.isEmpty ? ".[\(i)]" : "[\(i)]"
            }
        }
        return out
    }

    private func refuse(_ node: SchemaNode, _ keyword: String, _ message: String, _ path: [PathComponent]) -> ValidationError {
        ValidationError(path: Self.render(path), message: message, keyword: keyword, schemaPath: node.schemaPath + "/" + keyword)
    }

    mutating func check(_ index: Int, _ value: Value, path: [PathComponent]) -> ValidationError? {
        let node = nodes[index]
        steps -= 1
        if steps < 0 {
            return ValidationError(path: Self.render(path), message: "the value took too many steps to check against the schema",
                                   keyword: "", schemaPath: node.schemaPath)
        }
        if node.rejectsEverything { return refuse(node, "false", "no value is allowed here", path) }
        if let types = node.types, !types.contains(where: { Self.matches(value, $0) }) {
            let expected = types.map(\.rawValue).joined(separator: " or ")
            return refuse(node, "type", "expected \(expected), got \(SchemaCompiler.typeName(value: value))", path)
        }
        if let options = node.enumValues, !options.contains(where: { Self.equal($0, value) }) {
            return refuse(node, "enum", "expected one of \(Value.array(options).jsonString()), got \(Self.excerpt(value))", path)
        }
        if let expected = node.constValue, !Self.equal(expected, value) {
            return refuse(node, "const", "expected \(Self.excerpt(expected)), got \(Self.excerpt(value))", path)
        }
        switch value {
        case .object(let members):
            for name in node.required where members[name] == nil {
                return refuse(node, "required", "missing the required property '\(name)'", path)
            }
            var known = Set<String>()
            for (name, child) in node.properties {
                known.insert(name)
                if let member = members[name], let failure = check(child, member, path: path + [.member(name)]) { return failure }
            }
            if let additional = node.additionalProperties {
                for (name, member) in members where !known.contains(name) {
                    if nodes[additional].rejectsEverything {
                        return refuse(node, "additionalProperties", "property '\(name)' is not allowed", path)
                    }
                    if let failure = check(additional, member, path: path + [.member(name)]) { return failure }
                }
            }
        case .array(let elements):
            if let min = node.minItems, elements.count < min {
                return refuse(node, "minItems", "expected at least \(min) items, got \(elements.count)", path)
            }
            if let max = node.maxItems, elements.count > max {
                return refuse(node, "maxItems", "expected at most \(max) items, got \(elements.count)", path)
            }
            for (i, element) in elements.enumerated() {
                let child: Int? = i < node.prefixItems.count ? node.prefixItems[i] : node.items
                guard let child else { continue }
                if nodes[child].rejectsEverything, i >= node.prefixItems.count {
                    return refuse(node, "items", "expected at most \(node.prefixItems.count) items, got \(elements.count)", path)
                }
                if let failure = check(child, element, path: path + [.index(i)]) { return failure }
            }
        case .string(let text):
            if node.minLength != nil || node.maxLength != nil {
                let length = text.unicodeScalars.count
                if let min = node.minLength, length < min {
                    return refuse(node, "minLength", "expected at least \(min) characters, got \(length)", path)
                }
                if let max = node.maxLength, length > max {
                    return refuse(node, "maxLength", "expected at most \(max) characters, got \(length)", path)
                }
            }
            if let pattern = node.pattern {
                do throws(LinearRegex.StepLimitExceeded) {
                    var budget = steps
                    let found = try pattern.firstMatch(in: Array(text.unicodeScalars), steps: &budget) != nil
                    steps = budget
                    if !found {
                        return refuse(node, "pattern", "does not match the pattern \(Value.string(node.patternSource ?? "").jsonString())", path)
                    }
                } catch {
                    steps = -1
                    return refuse(node, "pattern", "the value took too many steps to check against the schema", path)
                }
            }
        case .int, .double:
            if let bound = node.minimum, Self.compare(value, bound) < 0 {
                return refuse(node, "minimum", "expected at least \(bound.jsonString()), got \(value.jsonString())", path)
            }
            if let bound = node.maximum, Self.compare(value, bound) > 0 {
                return refuse(node, "maximum", "expected at most \(bound.jsonString()), got \(value.jsonString())", path)
            }
            if let bound = node.exclusiveMinimum, Self.compare(value, bound) <= 0 {
                return refuse(node, "exclusiveMinimum", "expected more than \(bound.jsonString()), got \(value.jsonString())", path)
            }
            if let bound = node.exclusiveMaximum, Self.compare(value, bound) >= 0 {
                return refuse(node, "exclusiveMaximum", "expected less than \(bound.jsonString()), got \(value.jsonString())", path)
            }
        case .null, .bool:
            break
        }
        for child in node.allOf {
            if let failure = check(child, value, path: path) { return failure }
        }
        if !node.anyOf.isEmpty {
            var first: ValidationError?
            var matched = false
            for child in node.anyOf {
                if let failure = check(child, value, path: path) {
                    if steps < 0 { return failure }
                    first = first ?? failure
                } else {
                    matched = true
                    break
                }
            }
            if !matched {
                return refuse(node, "anyOf", "matches none of the \(node.anyOf.count) schemas of anyOf (the first says: \(first?.description ?? ""))", path)
            }
        }
        if !node.oneOf.isEmpty {
            var matches = 0
            for child in node.oneOf {
                let failure = check(child, value, path: path)
                if let failure, steps < 0 { return failure }
                if failure == nil { matches += 1 }
            }
            if matches != 1 {
                return refuse(node, "oneOf", "matches \(matches) of the \(node.oneOf.count) schemas of oneOf, not exactly one", path)
            }
        }
        if let negated = node.not {
            let failure = check(negated, value, path: path)
            if let failure, steps < 0 { return failure }
            if failure == nil { return refuse(node, "not", "matches the schema of not", path) }
        }
        if let target = node.ref, let failure = check(target, value, path: path) { return failure }
        return nil
    }

    private static func matches(_ value: Value, _ type: SchemaNode.TypeName) -> Bool {
        switch (type, value) {
        case (.null, .null), (.boolean, .bool), (.string, .string), (.array, .array), (.object, .object): return true
        case (.number, .int), (.number, .double), (.integer, .int): return true
        case (.integer, .double(let d)): return d.isFinite && d.rounded() == d
        default: return false
        }
    }

    /// JSON equality: numbers by value (`1 == 1.0`), objects as unordered members.
    static func equal(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.int, .int), (.int, .double), (.double, .int), (.double, .double): return compare(a, b) == 0
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { equal(value, $0) } ?? false }
        default: return a == b
        }
    }

    /// The order of two numbers (exact for two integers).
    static func compare(_ a: Value, _ b: Value) -> Int {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x < y ? -1 : x > y ? 1 : 0
        default:
            let x = a.doubleValue ?? Double(a.intValue ?? 0)
            let y = b.doubleValue ?? Double(b.intValue ?? 0)
            return x < y ? -1 : x > y ? 1 : 0
        }
    }

    /// A value as JSON, cut to 60 characters for messages.
    private static func excerpt(_ value: Value) -> String {
        let text = value.jsonString()
        return text.count <= 60 ? text : String(text.prefix(57)) + "..."
    }
}
