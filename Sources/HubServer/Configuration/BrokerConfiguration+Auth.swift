import Foundation
import HubRegistry
import HubValue
import HubWire
import Yams

extension BrokerConfiguration {
    /// The keys of `auth`.
    public static let authKeys = ["tokens", "timeout", "identities", "jwt"]
    /// The keys of an identity (`auth.identities.NAME`).
    public static let identityKeys = [
        "tokens", "jwtSubjects", "subscribe", "publish", "trigger", "pipelines", "admin", "deny", "maxConnections",
    ]
    /// The keys of an identity's `deny`.
    public static let denyKeys = ["subscribe", "publish", "trigger", "pipelines", "admin"]
    /// The keys of `auth.jwt`.
    public static let jwtKeys = ["keys", "audience", "issuer", "leeway"]
    /// The keys of one JWT key (`auth.jwt.keys[i]`).
    public static let jwtKeyKeys = ["algorithm", "kid", "secret", "secretFile", "publicKey"]

    /// `auth`: bare tokens, identities with their tokens, JWT subjects and permissions,
    /// JWT keys, and the time a client has to authenticate.
    mutating func readAuth(_ auth: ConfigurationReader.Entry, _ reader: ConfigurationReader) throws(ConfigurationError) {
        let fields = try reader.fields(auth.value, auth.path, allowed: BrokerConfiguration.authKeys)
        // Every token, once: a token names exactly one identity.
        var seenTokens: [String: String] = [:]
        func claim(_ token: String, for owner: String, at node: Node, _ path: String) throws(ConfigurationError) {
            guard !token.isEmpty else { throw reader.error(node, path, "a token cannot be empty") }
            if let first = seenTokens[token] {
                throw reader.error(node, path, first == owner ? "duplicate token" : "this token is already \(first)'s")
            }
            seenTokens[token] = owner
        }
        if let field = fields["tokens"] {
            var tokens = Set<String>()
            for item in try reader.items(field.value, field.path) {
                let token = try reader.string(item.node, item.path)
                try claim(token, for: "auth.tokens", at: item.node, item.path)
                tokens.insert(token)
            }
            guard !tokens.isEmpty else {
                throw reader.error(field.value, field.path, "expected at least one token (leave auth out to accept every client)")
            }
            service.session.tokens = tokens
        }
        var configuration = AuthConfiguration()
        if let field = fields["identities"] {
            var subjects: [String: String] = [:]
            for entry in try reader.entries(field.value, field.path) {
                let identity = try readIdentity(entry, reader, claim: claim)
                for (index, subject) in identity.jwtSubjects.enumerated() {
                    if let other = subjects[subject] {
                        throw reader.error(entry.value, "\(entry.path).jwtSubjects[\(index)]", "JWT subject '\(subject)' is already \(other)'s")
                    }
                    subjects[subject] = entry.key
                }
                configuration.identities.append(identity)
            }
        }
        if let field = fields["jwt"] { configuration.jwt = try readJWT(field, reader) }
        if !configuration.identities.isEmpty || configuration.jwt != nil {
            service.session.auth = configuration
        }
        if let field = fields["timeout"] {
            service.session.authenticationTimeout = try reader.duration(field.value, field.path, minimum: .milliseconds(1))
        }
    }

    /// One identity: its name (the key), its tokens and JWT subjects, its permissions
    /// (lists of name patterns per operation, and `deny`) and its connection limit.
    private func readIdentity(
        _ entry: ConfigurationReader.Entry, _ reader: ConfigurationReader,
        claim: (String, String, Node, String) throws(ConfigurationError) -> Void
    ) throws(ConfigurationError) -> AuthConfiguration.IdentityConfiguration {
        let name = entry.key
        guard !name.isEmpty, !name.hasPrefix("jwt:"), name != Identity.anonymous.name,
              name != Authenticator.bareTokenIdentity.name else {
            throw reader.error(entry.keyNode, entry.path, "'\(name)' cannot name an identity (reserved)")
        }
        let fields = try reader.fields(entry.value, entry.path, allowed: BrokerConfiguration.identityKeys)
        var tokens: [String] = []
        if let field = fields["tokens"] {
            for item in try reader.items(field.value, field.path) {
                let token = try reader.string(item.node, item.path)
                try claim(token, "identity '\(name)'", item.node, item.path)
                tokens.append(token)
            }
        }
        var subjects: [String] = []
        if let field = fields["jwtSubjects"] {
            for item in try reader.items(field.value, field.path) {
                let subject = try reader.string(item.node, item.path)
                guard !subject.isEmpty else { throw reader.error(item.node, item.path, "a JWT subject cannot be empty") }
                subjects.append(subject)
            }
        }
        var rules: [Permissions.Operation: Permissions.Rule] = [:]
        for operation in Permissions.Operation.allCases {
            guard let field = fields[operation.rawValue] else { continue }
            rules[operation, default: Permissions.Rule()].allow = try patterns(field.value, field.path, reader)
        }
        if let deny = fields["deny"] {
            let denials = try reader.fields(deny.value, deny.path, allowed: BrokerConfiguration.denyKeys)
            for operation in Permissions.Operation.allCases {
                guard let field = denials[operation.rawValue] else { continue }
                rules[operation, default: Permissions.Rule()].deny = try patterns(field.value, field.path, reader)
            }
        }
        var maxConnections: Int?
        if let field = fields["maxConnections"] {
            maxConnections = try reader.int(field.value, field.path, in: 1...Int.max)
        }
        return AuthConfiguration.IdentityConfiguration(
            identity: Identity(name: name, permissions: Permissions(rules), maxConnections: maxConnections),
            tokens: tokens, jwtSubjects: subjects)
    }

    /// A list of name patterns.
    private func patterns(_ node: Node, _ path: String, _ reader: ConfigurationReader) throws(ConfigurationError) -> [NamePattern] {
        var patterns: [NamePattern] = []
        for item in try reader.items(node, path) {
            let text = try reader.string(item.node, item.path)
            do {
                patterns.append(try NamePattern(text))
            } catch {
                throw reader.error(item.node, item.path, error.message)
            }
        }
        return patterns
    }

    /// `auth.jwt`: the keys (HS256 secrets, ES256 and RS256 public keys in PEM files) and
    /// the claims every token must carry.
    private func readJWT(_ jwt: ConfigurationReader.Entry, _ reader: ConfigurationReader) throws(ConfigurationError) -> JWTConfiguration {
        let fields = try reader.fields(jwt.value, jwt.path, allowed: BrokerConfiguration.jwtKeys)
        guard let keysField = fields["keys"] else {
            throw reader.error(jwt.keyNode, jwt.path, "missing 'keys' (the keys tokens are signed with)")
        }
        var keys: [JWTConfiguration.KeyConfiguration] = []
        var kids = Set<String>()
        for item in try reader.items(keysField.value, keysField.path) {
            let key = try readJWTKey(item.node, item.path, reader)
            if let kid = key.kid, !kids.insert(kid).inserted {
                throw reader.error(item.node, item.path, "duplicate kid '\(kid)'")
            }
            keys.append(key)
        }
        guard !keys.isEmpty else { throw reader.error(keysField.value, keysField.path, "expected at least one key") }
        var configuration = JWTConfiguration(keys: keys)
        if let field = fields["audience"] { configuration.audience = try nonEmpty(field, reader) }
        if let field = fields["issuer"] { configuration.issuer = try nonEmpty(field, reader) }
        if let field = fields["leeway"] { configuration.leeway = try reader.duration(field.value, field.path) }
        return configuration
    }

    private func nonEmpty(_ field: ConfigurationReader.Entry, _ reader: ConfigurationReader) throws(ConfigurationError) -> String {
        let text = try reader.string(field.value, field.path)
        guard !text.isEmpty else { throw reader.error(field.value, field.path, "expected a non-empty string") }
        return text
    }

    private func readJWTKey(_ node: Node, _ path: String, _ reader: ConfigurationReader) throws(ConfigurationError) -> JWTConfiguration.KeyConfiguration {
        let fields = try reader.fields(node, path, allowed: BrokerConfiguration.jwtKeyKeys)
        guard let algorithmField = fields["algorithm"] else {
            throw reader.error(node, path, "missing 'algorithm' (HS256, ES256 or RS256)")
        }
        let algorithm = try reader.string(algorithmField.value, algorithmField.path)
        func file(_ field: ConfigurationReader.Entry, _ role: String) throws(ConfigurationError) -> String {
            let text = try reader.string(field.value, field.path)
            let resolved = BrokerConfiguration.resolve(text, relativeTo: self.file)
            guard let contents = try? String(contentsOfFile: resolved, encoding: .utf8) else {
                throw reader.error(field.value, field.path, "cannot read the \(role) file '\(resolved)'")
            }
            return contents
        }
        let material: JWTConfiguration.KeyConfiguration.Material
        switch algorithm {
        case "HS256":
            if fields["publicKey"] != nil { throw reader.error(node, path, "an HS256 key is a 'secret' or 'secretFile', not a publicKey") }
            if let field = fields["secret"] {
                material = .secret(try reader.string(field.value, field.path))
            } else if let field = fields["secretFile"] {
                material = .secret(try file(field, "secret").trimmingCharacters(in: .whitespacesAndNewlines))
            } else {
                throw reader.error(node, path, "missing 'secret' or 'secretFile' (the HS256 shared secret)")
            }
        case "ES256", "RS256":
            guard fields["secret"] == nil, fields["secretFile"] == nil else {
                throw reader.error(node, path, "an \(algorithm) key is a 'publicKey' (a PEM file), not a secret")
            }
            guard let field = fields["publicKey"] else {
                throw reader.error(node, path, "missing 'publicKey' (the \(algorithm) public key, a PEM file)")
            }
            let pem = try file(field, "public key")
            material = algorithm == "ES256" ? .ecdsaPublicKey(pem) : .rsaPublicKey(pem)
        default:
            throw reader.error(algorithmField.value, algorithmField.path, "unknown algorithm '\(algorithm)' (HS256, ES256 or RS256)")
        }
        var key = JWTConfiguration.KeyConfiguration(material: material)
        if let field = fields["kid"] { key.kid = try nonEmpty(field, reader) }
        do {
            try key.validate()
        } catch {
            let place = fields["publicKey"] ?? fields["secret"] ?? fields["secretFile"] ?? algorithmField
            throw reader.error(place.value, place.path, "not a usable \(algorithm) key: \(error)")
        }
        return key
    }
}
