import HubServer
import Testing

@Suite("Broker configuration: errors")
struct ConfigurationErrorTests {
    /// Bad files and the error each one gives: file:line:column: key.path: message.
    static let parseErrors: [(yaml: String, error: String)] = [
        // YAML itself
        ("a: [1\n", "hub.yml:2:1: invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence at 1:4)"),
        ("a: b: c\n", "hub.yml:1:5: invalid YAML: mapping values are not allowed in this context"),
        ("- listen\n", "hub.yml:1:1: expected a mapping (got a sequence)"),
        ("just text\n", "hub.yml:1:1: expected a mapping of listen, autoCreate, limits, auth, allowAdHocPipelines, storage, defaults, subjects, triggers, pipelines, admin, metrics, drainGrace, cluster, http (got \"just text\")"),
        // unknown and duplicate keys
        ("listn: {}\n", "hub.yml:1:1: listn: unknown key 'listn'; valid keys: listen, autoCreate, limits, auth, allowAdHocPipelines, storage, defaults, subjects, triggers, pipelines, admin, metrics, drainGrace, cluster, http"),
        ("limits:\n  maxConection: 3\n", "hub.yml:2:3: limits.maxConection: unknown key 'maxConection'; valid keys: maxMessageBytes, maxConnections, maxSubscriptionsPerConnection, maxQueuedBytesPerConnection, pipelines, defaultBuffer, maxBuffer, perConnection, perIdentity, maxUnauthenticated, maxPendingHandshakes, idleNameTimeout"),
        ("limits:\n  pipelines:\n    maxStage: 3\n", "hub.yml:3:5: limits.pipelines.maxStage: unknown key 'maxStage'; valid keys: maxSourceLength, maxStages, maxExpressionDepth, minimumInterval, maxValueDepth, maxValueBytes, maxCallDepth"),
        ("listen: {hots: x}\n", "hub.yml:1:10: listen.hots: unknown key 'hots'; valid keys: host, port, tls, eventLoops, maxWriteDelay"),
        ("auth: {token: [a]}\n", "hub.yml:1:8: auth.token: unknown key 'token'; valid keys: tokens, timeout, identities, jwt"),
        ("subjects:\n  prices:\n    bufer: 3\n", "hub.yml:3:5: subjects.prices.bufer: unknown key 'bufer'; valid keys: kind, initial, buffer, overflow, schema, history, durable, maxKeys, maxBytes"),
        // JSON Schemas: unknown keywords and wrong values at their place in the file
        ("subjects:\n  input:\n    schema:\n      type: object\n      properties:\n        title: {type: string, maxLenght: 9}\n",
         "hub.yml:6:31: subjects.input.schema.properties.title.maxLenght: invalid schema: unknown keyword 'maxLenght' (did you mean 'maxLength'?); the keywords supported are type, enum, const, properties, required, additionalProperties, items, prefixItems, minLength, maxLength, minItems, maxItems, minimum, maximum, exclusiveMinimum, exclusiveMaximum, pattern, allOf, anyOf, oneOf, not, $ref, $defs"),
        ("subjects:\n  input:\n    schema: {type: objet}\n",
         "hub.yml:3:14: subjects.input.schema.type: invalid schema: unknown type \"objet\" (types: null, boolean, integer, number, string, array, object)"),
        ("subjects:\n  input:\n    schema:\n      anyOf:\n        - {type: string}\n        - {$ref: \"#/$defs/x\"}\n",
         "hub.yml:6:12: subjects.input.schema.anyOf[1].$ref: invalid schema: $ref '#/$defs/x' does not resolve: use '#' or '#/$defs/NAME' of this schema"),
        ("subjects:\n  state:\n    initial: 5\n    schema: {type: object}\n",
         "hub.yml:3:14: subjects.state.initial: the initial value does not match the schema: .: expected object, got integer"),
        ("pipelines:\n  p:\n    source: a\n    share: true\n", "hub.yml:4:5: pipelines.p.share: unknown key 'share'; valid keys: source, shared, currentValue, buffer, overflow, run, onError, checkpoint, restartFrom"),
        ("autoCreate: true\nautoCreate: false\n", "hub.yml:2:1: autoCreate: duplicate key 'autoCreate' (first at 1:1)"),
        ("subjects:\n  a:\n  a:\n", "hub.yml:3:3: subjects.a: duplicate key 'a' (first at 2:3)"),
        ("subjects:\n  [a]: {}\n", "hub.yml:2:3: subjects: a key must be a string (got a sequence)"),
        // wrong types and ranges
        ("subjects:\n  prices:\n    overflow: fast\n", "hub.yml:3:15: subjects.prices.overflow: expected one of error, dropOldest, dropNewest, latest, block (got \"fast\")"),
        // `block` slows publishers down: a subject's policy, not a pipeline's.
        ("pipelines:\n  p:\n    source: a\n    overflow: block\n", "hub.yml:4:15: pipelines.p.overflow: expected one of error, dropOldest, dropNewest, latest (got \"block\")"),
        ("subjects:\n  prices: {kind: current}\n", "hub.yml:2:18: subjects.prices.kind: expected one of passthrough, currentValue, table (got \"current\")"),
        ("listen: {port: 70000}\n", "hub.yml:1:16: listen.port: expected an integer between 0 and 65535 (got 70000)"),
        ("listen: {eventLoops: 0}\n", "hub.yml:1:22: listen.eventLoops: expected \"auto\" or an integer between 1 and 256 (got 0)"),
        ("listen: {eventLoops: all}\n", "hub.yml:1:22: listen.eventLoops: expected \"auto\" or an integer between 1 and 256 (got \"all\")"),
        ("listen: {maxWriteDelay: 2s}\n", "hub.yml:1:25: listen.maxWriteDelay: expected a duration of at most 1s (got \"2s\")"),
        ("listen: {maxWriteDelay: soon}\n", "hub.yml:1:25: listen.maxWriteDelay: expected a duration such as \"10ms\", \"5s\" or \"1m\" (units ns, us, ms, s, m, h) (got \"soon\")"),
        ("listen: {port: -1}\n", "hub.yml:1:16: listen.port: expected an integer between 0 and 65535 (got -1)"),
        ("listen: {port: \"80\"}\n", "hub.yml:1:16: listen.port: expected an integer between 0 and 65535 (got \"80\")"),
        ("listen: {port: 80.5}\n", "hub.yml:1:16: listen.port: expected an integer between 0 and 65535 (got 80.5)"),
        ("listen: {host: \"\"}\n", "hub.yml:1:16: listen.host: expected a host name or address (got an empty string)"),
        ("listen: {host: [a]}\n", "hub.yml:1:16: listen.host: expected a string (got a sequence)"),
        ("listen: 7420\n", "hub.yml:1:9: listen: expected a mapping (got 7420)"),
        ("autoCreate: yes\n", "hub.yml:1:13: autoCreate: expected true or false (got \"yes\")"),
        ("limits: {maxConnections: 0}\n", "hub.yml:1:26: limits.maxConnections: expected an integer ≥ 1 (got 0)"),
        ("limits: {maxMessageBytes: lots}\n", "hub.yml:1:27: limits.maxMessageBytes: expected an integer ≥ 1 (got \"lots\")"),
        ("limits: {maxSubscriptionsPerConnection: -5}\n", "hub.yml:1:41: limits.maxSubscriptionsPerConnection: expected an integer ≥ 1 (got -5)"),
        ("limits: {maxQueuedBytesPerConnection: 99999999999999999999}\n", "hub.yml:1:39: limits.maxQueuedBytesPerConnection: expected an integer ≥ 1 (got 99999999999999999999)"),
        ("limits: {maxBuffer: 10, defaultBuffer: 11}\n", "hub.yml:1:40: limits.defaultBuffer: expected an integer between 1 and 10 (got 11)"),
        ("limits: {pipelines: {maxStages: 0}}\n", "hub.yml:1:33: limits.pipelines.maxStages: expected an integer ≥ 1 (got 0)"),
        ("limits: {pipelines: {minimumInterval: 3}}\n", "hub.yml:1:39: limits.pipelines.minimumInterval: expected a duration such as \"10ms\", \"5s\" or \"1m\" (units ns, us, ms, s, m, h) (got \"3\")"),
        ("limits: {pipelines: {minimumInterval: 10 days}}\n", "hub.yml:1:39: limits.pipelines.minimumInterval: expected a duration such as \"10ms\", \"5s\" or \"1m\" (units ns, us, ms, s, m, h) (got \"10 days\")"),
        ("auth: {timeout: 0s}\n", "hub.yml:1:17: auth.timeout: expected a duration of at least 0.001 seconds (got \"0s\")"),
        ("auth: {tokens: []}\n", "hub.yml:1:16: auth.tokens: expected at least one token (leave auth out to accept every client)"),
        ("auth: {tokens: [a, a]}\n", "hub.yml:1:20: auth.tokens[1]: duplicate token"),
        ("auth: {tokens: a}\n", "hub.yml:1:16: auth.tokens: expected a sequence (got \"a\")"),
        // identities and JWT keys
        ("auth: {identities: {dash: {subscibe: [x]}}}\n", "hub.yml:1:28: auth.identities.dash.subscibe: unknown key 'subscibe'; valid keys: tokens, jwtSubjects, subscribe, publish, trigger, pipelines, admin, deny, maxConnections"),
        ("auth: {identities: {dash: {subscribe: [\"prices*\"]}}}\n", "hub.yml:1:40: auth.identities.dash.subscribe[0]: name pattern 'prices*': '*' and '>' stand for whole segments ('prices.*', not 'prices*')"),
        ("auth: {identities: {dash: {deny: {publsh: [x]}}}}\n", "hub.yml:1:35: auth.identities.dash.deny.publsh: unknown key 'publsh'; valid keys: subscribe, publish, trigger, pipelines, admin"),
        ("auth: {tokens: [a], identities: {dash: {tokens: [a]}}}\n", "hub.yml:1:50: auth.identities.dash.tokens[0]: this token is already auth.tokens's"),
        ("auth: {identities: {a: {jwtSubjects: [alice]}, b: {jwtSubjects: [alice]}}}\n", "hub.yml:1:51: auth.identities.b.jwtSubjects[0]: JWT subject 'alice' is already a's"),
        ("auth: {identities: {anonymous: {tokens: [x]}}}\n", "hub.yml:1:21: auth.identities.anonymous: 'anonymous' cannot name an identity (reserved)"),
        ("auth: {jwt: {audience: hub}}\n", "hub.yml:1:8: auth.jwt: missing 'keys' (the keys tokens are signed with)"),
        ("auth: {jwt: {keys: [{algorithm: HS512, secret: x}]}}\n", "hub.yml:1:33: auth.jwt.keys[0].algorithm: unknown algorithm 'HS512' (HS256, ES256 or RS256)"),
        ("auth: {jwt: {keys: [{algorithm: HS256}]}}\n", "hub.yml:1:21: auth.jwt.keys[0]: missing 'secret' or 'secretFile' (the HS256 shared secret)"),
        ("auth: {jwt: {keys: [{algorithm: ES256, secret: x}]}}\n", "hub.yml:1:21: auth.jwt.keys[0]: an ES256 key is a 'publicKey' (a PEM file), not a secret"),
        ("auth: {jwt: {keys: [{algorithm: RS256, publicKey: /nonexistent.pem}]}}\n", "hub.yml:1:51: auth.jwt.keys[0].publicKey: cannot read the public key file '/nonexistent.pem'"),
        ("auth: {jwt: {keys: [{algorithm: HS256, secret: a, kid: k}, {algorithm: HS256, secret: b, kid: k}]}}\n", "hub.yml:1:60: auth.jwt.keys[1]: duplicate kid 'k'"),
        ("allowAdHocPipelines: maybe\n", "hub.yml:1:22: allowAdHocPipelines: expected true, false or a sequence of tokens from auth.tokens (got \"maybe\")"),
        ("auth: {tokens: [a]}\nallowAdHocPipelines: [a, b]\n", "hub.yml:2:26: allowAdHocPipelines[1]: 'b' is not one of auth.tokens"),
        ("subjects:\n  prices: {buffer: 0}\n", "hub.yml:2:20: subjects.prices.buffer: expected an integer between 1 and 100000 (got 0)"),
        ("limits: {maxBuffer: 5}\npipelines:\n  p: {source: a, buffer: 6}\n", "hub.yml:3:26: pipelines.p.buffer: expected an integer between 1 and 5 (got 6)"),
        ("pipelines:\n  p:\n    source: a\n    shared: yes\n", "hub.yml:4:13: pipelines.p.shared: expected true or false (got \"yes\")"),
        ("subjects:\n  a: 1\n", "hub.yml:2:6: subjects.a: expected a mapping (got 1)"),
        ("subjects: [a, b]\n", "hub.yml:1:11: subjects: expected a mapping (got a sequence)"),
        ("triggers: {a: 1}\n", "hub.yml:1:11: triggers: expected a sequence (got a mapping)"),
        ("triggers: [[a]]\n", "hub.yml:1:12: triggers[0]: expected a string (got a sequence)"),
        ("subjects:\n  s:\n    kind: passthrough\n    initial: 1\n", "hub.yml:4:5: subjects.s.initial: a passthrough subject has no initial value (use kind: currentValue)"),
        ("subjects:\n  s: {initial: 99999999999999999999}\n", "hub.yml:2:16: subjects.s.initial: integer 99999999999999999999 does not fit in 64 bits"),
        ("subjects:\n  s: {initial: [1, .inf]}\n", "hub.yml:2:20: subjects.s.initial[1]: .inf is not a finite number (JSON has no infinity or NaN)"),
        ("subjects:\n  s: {initial: {a: 1, a: 2}}\n", "hub.yml:2:23: subjects.s.initial.a: duplicate key 'a' (first at 2:17)"),
        // names
        ("subjects:\n  9lives: {}\n", "hub.yml:2:3: subjects.9lives: invalid name '9lives': a name must match [A-Za-z_][A-Za-z0-9_.]*"),
        ("triggers: [\"bad name\"]\n", "hub.yml:1:12: triggers[0]: invalid name 'bad name': a name must match [A-Za-z_][A-Za-z0-9_.]*"),
        ("pipelines:\n  \"\": a\n", "hub.yml:2:3: pipelines.: invalid name '': a name cannot be empty"),
        ("subjects: {a: {}}\ntriggers: [a]\n", "hub.yml:2:12: triggers[0]: 'a' is already declared as a subject (at 1:12)"),
        ("triggers: [t]\npipelines:\n  t: x\n", "hub.yml:3:3: pipelines.t: 't' is already declared as a trigger (at 1:12)"),
        ("subjects: {p: {}}\npipelines:\n  p: x\n", "hub.yml:3:3: pipelines.p: 'p' is already declared as a subject (at 1:12)"),
        ("triggers: [t, t]\n", "hub.yml:1:15: triggers[1]: 't' is already declared as a trigger (at 1:12)"),
        // pipeline text: syntax and limits, placed in the file
        ("pipelines:\n  p: \"orders | map(.x = 1)\"\n", "hub.yml:2:23: pipelines.p: pipeline error: unexpected '=' (use '==' to compare)"),
        ("pipelines:\n  p: orders | map(.x = 1)\n", "hub.yml:2:22: pipelines.p: pipeline error: unexpected '=' (use '==' to compare)"),
        ("pipelines:\n  p:\n    source: 'a | map(.x'\n", "hub.yml:3:24: pipelines.p.source: pipeline error: expected ')' after argument list, found end of text"),
        ("pipelines:\n  p:\n    source: |\n      orders\n        | map(.x\n", "hub.yml:6:7: pipelines.p.source: pipeline error: expected ')' after argument list, found end of text"),
        ("pipelines:\n  p:\n    source: |\n      orders\n        | map(1 +)\n    shared: false\n", "hub.yml:5:18: pipelines.p.source: pipeline error: expected an expression, found ')'"),
        ("pipelines:\n  p:\n    source: >\n      orders\n      | frob(1 +)\n", "hub.yml:5:17: pipelines.p.source: pipeline error: expected an expression, found ')'"),
        ("pipelines:\n  p: {shared: true}\n", "hub.yml:2:3: pipelines.p: missing key 'source' (the pipeline text)"),
        ("pipelines:\n  p:\n", "hub.yml:2:3: pipelines.p: missing key 'source' (the pipeline text)"),
        ("limits: {pipelines: {maxStages: 2}}\npipelines:\n  p: a | map(1) | map(2)\n", "hub.yml:3:19: pipelines.p: pipeline error: too many stages (the limit is 2)"),
        // http: the origins a browser may call the HTTP API from
        ("http:\n  cors:\n    origins: [\"https://app.example/\"]\n", "hub.yml:3:15: http.cors.origins[0]: 'https://app.example/': expected a host (and an optional port) after '://', with no path, query or trailing slash"),
        ("http:\n  cors:\n    origins: [app.example]\n", "hub.yml:3:15: http.cors.origins[0]: 'app.example': expected an origin such as https://app.example.com (scheme://host[:port]) or *"),
        ("http:\n  cors:\n    origins: \"*\"\n", "hub.yml:3:14: http.cors.origins: expected a sequence (got \"*\")"),
        ("http:\n  cors: {origin: [\"*\"]}\n", "hub.yml:2:10: http.cors.origin: unknown key 'origin'; valid keys: origins"),
    ]

    @Test(arguments: parseErrors)
    func parseError(yaml: String, error: String) {
        #expect(HubServerConfigTests.parseError(yaml) == error)
    }

    /// Mistakes found only when the pipelines are compiled against the hub.
    static let declareErrors: [(yaml: String, error: String)] = [
        ("autoCreate: false\npipelines:\n  p: \"orders | map(.x)\"\n", "hub.yml:3:7: pipelines.p: no subject named 'orders'"),
        ("pipelines:\n  a: b\n  b: {source: c, shared: false}\n  c: a | map(1)\n", "hub.yml:2:6: pipelines.a: pipeline error: pipelines use each other as sources in a cycle: a → b → c → a"),
        ("pipelines:\n  r: p\n  p: q | map(.x)\n  q: p\n", "hub.yml:2:6: pipelines.r: pipeline error: pipelines use each other as sources in a cycle: p → q → p"),
        ("autoCreate: false\ntriggers: [t]\npipelines:\n  p: trigger(u)\n", "hub.yml:4:6: pipelines.p: no trigger named 'u'"),
        ("pipelines:\n  p: q | map(.x)\n  q: p\n", "hub.yml:2:6: pipelines.p: pipeline error: pipelines use each other as sources in a cycle: p → q → p"),
        ("pipelines:\n  p:\n    source: p\n    shared: false\n", "hub.yml:3:13: pipelines.p.source: pipeline error: pipeline 'p' uses itself as a source"),
        ("triggers: [t]\npipelines:\n  p: \"t | map(.x)\"\n  q: {source: \"sequence(1)\"}\n", "hub.yml:4:25: pipelines.q.source: pipeline error: sequence needs an array, got int"),
        ("limits: {pipelines: {minimumInterval: 1s}}\npipelines:\n  p: timer(10ms)\n", "hub.yml:3:12: pipelines.p: pipeline error: timer: the interval 10ms is shorter than the minimum of 1s"),
    ]

    @Test(arguments: declareErrors)
    func declareError(yaml: String, error: String) {
        #expect(HubServerConfigTests.parseError(yaml) == nil)
        #expect(HubServerConfigTests.declareError(yaml) == error)
    }

    @Test func errorDescriptionFormat() {
        let error = ConfigurationError(file: "hub.yml", line: 12, column: 5, path: "subjects.prices.overflow",
                                       message: "expected one of error, dropOldest, dropNewest, latest")
        #expect(error.description == "hub.yml:12:5: subjects.prices.overflow: expected one of error, dropOldest, dropNewest, latest")
        let top = ConfigurationError(file: "a.yml", line: 1, column: 2, path: "", message: "invalid YAML: x")
        #expect(top.description == "a.yml:1:2: invalid YAML: x")
    }

    @Test func theFileNameIsTheOneGiven() {
        do {
            _ = try parseBroker(yaml: "listen: {port: x}", file: "conf/broker.yml")
            Issue.record("parsed")
        } catch {
            #expect(error.file == "conf/broker.yml" && error.line == 1 && error.column == 16 && error.path == "listen.port")
        }
    }
}
