import HubRegistry
import HubValue
import Testing

@Suite("JSON Schema: the subset subjects validate with")
struct JSONSchemaTests {
    private func schema(_ json: String) throws -> JSONSchema {
        try JSONSchema(try Value.parse(json))
    }

    /// The path and message of the first problem, or nil.
    private func check(_ schema: JSONSchema, _ json: String) throws -> String? {
        schema.validate(try Value.parse(json))?.description
    }

    @Test func objectsAndTheirPaths() throws {
        let s = try schema("""
        {"type": "object", "required": ["type"],
         "properties": {
           "type": {"enum": ["stateRequested", "todoAdded", "todoRemoved"]},
           "title": {"type": "string", "minLength": 1, "maxLength": 5},
           "id": {"type": "string", "pattern": "^[0-9]+$"},
           "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
         "additionalProperties": false}
        """)
        #expect(try check(s, #"{"type": "todoAdded", "title": "Milk"}"#) == nil)
        #expect(try check(s, "5") == ".: expected object, got integer")
        #expect(try check(s, "{}") == ".: missing the required property 'type'")
        #expect(try check(s, #"{"type": "nope"}"#) == #".type: expected one of ["stateRequested","todoAdded","todoRemoved"], got "nope""#)
        #expect(try check(s, #"{"type": "todoAdded", "title": ""}"#) == ".title: expected at least 1 characters, got 0")
        #expect(try check(s, #"{"type": "todoAdded", "title": "éééééé"}"#) == ".title: expected at most 5 characters, got 6")
        #expect(try check(s, #"{"type": "todoRemoved", "id": "1a"}"#) == #".id: does not match the pattern "^[0-9]+$""#)
        #expect(try check(s, #"{"type": "todoAdded", "tags": ["a", 2]}"#) == ".tags[1]: expected string, got integer")
        #expect(try check(s, #"{"type": "todoAdded", "tags": ["a", "b", "c"]}"#) == ".tags: expected at most 2 items, got 3")
        #expect(try check(s, #"{"type": "todoAdded", "extra": 1}"#) == ".: property 'extra' is not allowed")
        let error = s.validate(try Value.parse(#"{"type": "todoAdded", "tags": [1]}"#))
        #expect(error?.keyword == "type")
        #expect(error?.schemaPath == "#/properties/tags/items/type")
    }

    @Test func typesNumbersAndConstants() throws {
        let s = try schema(#"{"type": ["integer", "null"], "minimum": 0, "exclusiveMaximum": 10}"#)
        #expect(try check(s, "null") == nil)
        #expect(try check(s, "3") == nil)
        #expect(try check(s, "3.0") == nil, "an integral float is an integer")
        #expect(try check(s, "3.5") == ".: expected integer or null, got number")
        #expect(try check(s, "-1") == ".: expected at least 0, got -1")
        #expect(try check(s, "10") == ".: expected less than 10, got 10")
        let c = try schema(#"{"const": {"a": [1, 2.0]}}"#)
        #expect(try check(c, #"{"a": [1.0, 2]}"#) == nil, "numbers compare by value")
        #expect(try check(c, #"{"a": [1]}"#) == #".: expected {"a":[1,2.0]}, got {"a":[1]}"#)
        let bounds = try schema(#"{"minimum": 1.5, "maximum": 9007199254740993, "exclusiveMinimum": 1}"#)
        #expect(try check(bounds, "9007199254740993") == nil)
        #expect(try check(bounds, "9007199254740994") == ".: expected at most 9007199254740993, got 9007199254740994")
    }

    @Test func tuplesCombinatorsAndReferences() throws {
        let s = try schema("""
        {"$defs": {"point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "items": false}},
         "anyOf": [{"$ref": "#/$defs/point"}, {"type": "string"}],
         "not": {"const": "origin"}}
        """)
        #expect(try check(s, "[1, 2]") == nil)
        #expect(try check(s, #""north""#) == nil)
        #expect(try check(s, #""origin""#) == ".: matches the schema of not")
        #expect(try check(s, "[1, 2, 3]")?.hasPrefix(".: matches none of the 2 schemas of anyOf") == true)
        let one = try schema(#"{"oneOf": [{"type": "integer"}, {"minimum": 5}]}"#)
        #expect(try check(one, "3") == nil)
        #expect(try check(one, "7") == ".: matches 2 of the 2 schemas of oneOf, not exactly one")
        // A recursive schema through a property is fine.
        let tree = try schema(##"{"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}"##)
        #expect(try check(tree, #"{"children": [{"children": []}, {"children": [{"children": [1]}]}]}"#)
                == ".children[1].children[0].children[0]: expected object, got integer")
        #expect(try check(try schema("false"), "1") == ".: no value is allowed here")
        #expect(try check(try schema("true"), "1") == nil)
        #expect(try check(try schema(#"{"title": "anything", "description": "annotations are ignored"}"#), "1") == nil)
    }

    @Test(arguments: [
        (#"{"maxLenght": 3}"#, "maxLenght: unknown keyword 'maxLenght' (did you mean 'maxLength'?); the keywords supported are type, enum, const, properties, required, additionalProperties, items, prefixItems, minLength, maxLength, minItems, maxItems, minimum, maximum, exclusiveMinimum, exclusiveMaximum, pattern, allOf, anyOf, oneOf, not, $ref, $defs"),
        (#"{"properties": {"a": {"uniqueItems": true}}}"#, "properties.a.uniqueItems: unknown keyword 'uniqueItems'; the keywords supported are type, enum, const, properties, required, additionalProperties, items, prefixItems, minLength, maxLength, minItems, maxItems, minimum, maximum, exclusiveMinimum, exclusiveMaximum, pattern, allOf, anyOf, oneOf, not, $ref, $defs"),
        (#"{"type": "integr"}"#, "type: unknown type \"integr\" (types: null, boolean, integer, number, string, array, object)"),
        (#"{"minLength": -1}"#, "minLength: minLength needs a non-negative integer, got -1"),
        (#"{"pattern": "(a)\\1"}"#, "pattern: invalid pattern: backreferences are not supported (they cannot be matched in linear time) (at character 4 of the pattern)"),
        (##"{"$ref": "#/$defs/missing"}"##, "$ref: $ref '#/$defs/missing' does not resolve: use '#' or '#/$defs/NAME' of this schema"),
        (#"{"$ref": "https://example.com/s.json"}"#, "$ref: $ref 'https://example.com/s.json' does not resolve: use '#' or '#/$defs/NAME' of this schema"),
        (#"{"exclusiveMinimum": true}"#, "exclusiveMinimum: exclusiveMinimum is a number in this JSON Schema version (2020-12), not a boolean"),
        ("3", "a schema is an object or a boolean, got integer"),
        (##"{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}"##,
         "'#/$defs/b/anyOf/0' refers back to '#/$defs/a' without going into a property or an item: a value would be checked forever"),
    ] as [(String, String)])
    func schemasOutsideTheSubsetAreRefusedWithTheirPath(json: String, message: String) throws {
        do {
            _ = try schema(json)
            Issue.record("accepted \(json)")
        } catch let error as JSONSchema.DefinitionError {
            #expect(error.description == message)
        }
    }

    @Test func checkingWorkIsBounded() throws {
        // Nested anyOf over a long array: every element costs a few steps; a huge value is refused, not a hang.
        let s = try schema(##"{"$defs": {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/v"}}]}}, "$ref": "#/$defs/v"}"##)
        let small = Value.array(Array(repeating: .array(Array(repeating: .int(1), count: 10)), count: 10))
        #expect(s.validate(small) == nil)
        let huge = Value.array(Array(repeating: .array(Array(repeating: .array(Array(repeating: .int(1), count: 100)), count: 100)), count: 100))
        #expect(s.validate(huge)?.message == "the value took too many steps to check against the schema")
    }
}
