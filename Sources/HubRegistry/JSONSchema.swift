import HubPipeline
import HubValue

/// A JSON Schema a subject's values must match (configuration `subjects.NAME.schema`),
/// compiled once and checked at every `send`.
///
/// The subset is the keywords of JSON Schema 2020-12 that describe shared state, written
/// by hand so that its cost stays bounded and its messages name the offending part:
///
/// - `type` (a name or an array of `null boolean integer number string array object`),
///   `enum`, `const`;
/// - objects: `properties`, `required`, `additionalProperties` (a boolean or a schema);
/// - arrays: `prefixItems`, `items` (for the elements after the `prefixItems`),
///   `minItems`, `maxItems`;
/// - strings: `minLength`, `maxLength` (in Unicode scalars), `pattern` (a ``LinearRegex``,
///   searched anywhere in the string as ECMAScript does: anchor it with `^...$`);
/// - numbers: `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`;
/// - `allOf`, `anyOf`, `oneOf`, `not`; `$ref` to `#` or `#/$defs/NAME` of the same
///   document, `$defs`;
/// - `true` and `false` as schemas; the annotations `title`, `description`, `$comment`,
///   `$schema`, `default`, `examples`, `deprecated`, `readOnly`, `writeOnly` are accepted
///   and ignored.
///
/// Any other keyword is refused when the schema is compiled (``DefinitionError``, with
/// the keyword's path in the schema), as are `$ref`s that do not resolve and `$ref`
/// cycles that never go into a property or an item (they would check the same value
/// forever). Checking a value takes at most ``maximumSteps`` steps; a value that needs
/// more is refused.
public struct JSONSchema: Sendable, Hashable {
    /// Why a schema is refused.
    public struct DefinitionError: Error, Hashable, Sendable, CustomStringConvertible {
        /// What is wrong.
        public var message: String
        /// Where in the schema: the keys and indexes from its root.
        public var path: [String]

        /// The error `message` at `path`.
        public init(message: String, path: [String]) {
            self.message = message
            self.path = path
        }

        public var description: String { path.isEmpty ? message : "\(path.joined(separator: ".")): \(message)" }
    }

    /// Why a value does not match.
    public struct ValidationError: Error, Hashable, Sendable, CustomStringConvertible {
        /// Where in the value, in the pipeline language's accessors: `.`, `.title`, `.todos[0].title`.
        public var path: String
        /// What is wrong there, e.g. `expected string, got integer`.
        public var message: String
        /// The keyword that refused it.
        public var keyword: String
        /// Where that keyword is in the schema, as a JSON pointer fragment: `#/properties/title/type`.
        public var schemaPath: String

        public var description: String { "\(path): \(message)" }
    }

    /// The most steps (one per schema applied to one value) a check may take.
    public static let maximumSteps = 1_000_000
    /// The deepest schema.
    public static let maximumDepth = 64

    /// The schema as given.
    public let source: Value
    let nodes: [SchemaNode]

    /// Compiles `schema`; throws ``DefinitionError`` for what is outside the subset.
    public init(_ schema: Value) throws(DefinitionError) {
        source = schema
        var compiler = SchemaCompiler(root: schema)
        nodes = try compiler.compile()
    }

    /// The first reason `value` does not match, or `nil` when it matches.
    public func validate(_ value: Value) -> ValidationError? {
        var checker = SchemaChecker(nodes: nodes, steps: Self.maximumSteps)
        return checker.check(0, value, path: [])
    }

    /// Schemas are equal when their documents are.
    public static func == (lhs: JSONSchema, rhs: JSONSchema) -> Bool { lhs.source == rhs.source }

    public func hash(into hasher: inout Hasher) { hasher.combine(source) }

    /// The names of the keywords the subset knows, for messages.
    public static let keywords: [String] = [
        "type", "enum", "const", "properties", "required", "additionalProperties", "items", "prefixItems",
        "minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "pattern", "allOf", "anyOf", "oneOf", "not", "$ref", "$defs",
    ]

    /// Keywords accepted and ignored.
    public static let annotations: Set<String> = [
        "title", "description", "$comment", "$schema", "default", "examples", "deprecated", "readOnly", "writeOnly",
    ]
}

/// One compiled schema: the checks of its keywords, other schemas by index.
struct SchemaNode: Sendable {
    enum TypeName: String, Sendable, CaseIterable {
        case null, boolean, integer, number, string, array, object
    }

    /// Where it is in the schema document (`#/properties/a`).
    var schemaPath: String
    /// `false`: nothing matches; `true` and `{}` match everything.
    var rejectsEverything = false
    var types: [TypeName]?
    var enumValues: [Value]?
    var constValue: Value?
    var properties: [(name: String, node: Int)] = []
    var required: [String] = []
    var additionalProperties: Int?
    var prefixItems: [Int] = []
    var items: Int?
    var minLength: Int?
    var maxLength: Int?
    var minItems: Int?
    var maxItems: Int?
    var minimum: Value?
    var maximum: Value?
    var exclusiveMinimum: Value?
    var exclusiveMaximum: Value?
    var pattern: LinearRegex?
    var patternSource: String?
    var allOf: [Int] = []
    var anyOf: [Int] = []
    var oneOf: [Int] = []
    var not: Int?
    var ref: Int?
}
