import HubPipeline
import HubValue
import HubWire

/// What an identity may do, per kind of operation, as lists of ``NamePattern``s it is
/// allowed and denied. A name is allowed for an operation when an allow pattern of that
/// operation matches it and no deny pattern does (deny wins). An operation with no allow
/// patterns allows nothing.
///
/// | operation | covers |
/// |---|---|
/// | ``Operation/subscribe`` | `subscribe` `to` a subject, named pipeline or trigger, and every name a pipeline reads |
/// | ``Operation/publish`` | `send`, `complete`, `fail` and `delete` on a subject, and pipelines writing into one (`into`) |
/// | ``Operation/trigger`` | `trigger` |
/// | ``Operation/pipelines`` | ad-hoc pipeline text: the names such text may read (each also needs `subscribe`); none: no ad-hoc pipelines |
/// | ``Operation/admin`` | the operator's resources: metrics and the system subjects (`$sys.…`) |
public struct Permissions: Hashable, Sendable {
    /// The kinds of operations permissions are given for.
    public enum Operation: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// Receiving from a name (subscribing to it, or reading it in a pipeline).
        case subscribe
        /// Writing into a subject: send, complete, fail, delete.
        case publish
        /// Activating a trigger.
        case trigger
        /// Sending ad-hoc pipeline text that reads the names.
        case pipelines
        /// Metrics and system subjects.
        case admin

        /// The spelling in configuration and in JWT claims.
        public var description: String { rawValue }
    }

    /// The allow and deny patterns of one operation.
    public struct Rule: Hashable, Sendable {
        /// Names matching one of these are allowed (unless denied).
        public var allow: [NamePattern]
        /// Names matching one of these are denied, whatever `allow` says.
        public var deny: [NamePattern]

        /// A rule.
        public init(allow: [NamePattern] = [], deny: [NamePattern] = []) {
            self.allow = allow
            self.deny = deny
        }

        /// Whether `name` is allowed.
        public func allows(_ name: String) -> Bool {
            guard allow.contains(where: { $0.matches(name) }) else { return false }
            return !deny.contains(where: { $0.matches(name) })
        }

        /// Whether any name at all may be allowed.
        public var allowsAnything: Bool { !allow.isEmpty }
    }

    /// The rule of each operation (an operation missing here allows nothing).
    public var rules: [Operation: Rule] {
        didSet { isUnrestricted = Permissions.unrestricted(rules) }
    }
    /// Whether every operation is allowed on every name (`>` allowed, nothing denied):
    /// then nothing needs checking.
    public private(set) var isUnrestricted: Bool

    /// Permissions with `rules`.
    public init(_ rules: [Operation: Rule] = [:]) {
        self.rules = rules
        isUnrestricted = Permissions.unrestricted(rules)
    }

    private static func unrestricted(_ rules: [Operation: Rule]) -> Bool {
        Operation.allCases.allSatisfy { operation in
            guard let rule = rules[operation] else { return false }
            return rule.deny.isEmpty && rule.allow.contains { $0.text == ">" }
        }
    }

    /// Every operation on every name: what every client has on a broker without
    /// authentication, and what a bare token of `auth.tokens` gives.
    public static let everything: Permissions = {
        var rules: [Operation: Rule] = [:]
        for operation in Operation.allCases { rules[operation] = Rule(allow: [try! NamePattern(">")]) }
        return Permissions(rules)
    }()

    /// Nothing at all.
    public static let nothing = Permissions()

    /// Whether `operation` is allowed on `name`.
    public func allows(_ operation: Operation, _ name: String) -> Bool {
        rules[operation]?.allows(name) ?? false
    }

    /// Whether `operation` is allowed on some name (for `pipelines`: whether ad-hoc
    /// pipeline text is accepted at all).
    public func allowsAny(_ operation: Operation) -> Bool {
        rules[operation]?.allowsAnything ?? false
    }

    /// Throws `forbidden` naming `name` and what was refused, unless `operation` is
    /// allowed on it. `doing` says what the client tried ("send to", "subscribe to").
    public func check(_ operation: Operation, _ name: String, doing: String) throws(HubError) {
        guard allows(operation, name) else {
            throw Permissions.forbidden(operation, name, doing: doing)
        }
    }

    /// The `forbidden` error of `operation` refused on `name`.
    public static func forbidden(_ operation: Operation, _ name: String, doing: String) -> HubError {
        HubError(
            .forbidden, "not allowed to \(doing) '\(name)' (no \(operation) permission for it)",
            data: ["name": .string(name), "permission": .string(operation.rawValue)])
    }

    /// Reads permissions from a JSON object (a JWT claim, or configuration turned into a
    /// `Value`): `{"subscribe": [patterns], "publish": [...], "trigger": [...],
    /// "pipelines": [...], "admin": [...], "deny": {"subscribe": [...], ...}}`. Unknown
    /// keys are refused, so that a misspelt permission never silently grants or denies.
    public init(json: Value) throws(HubError) {
        guard case let .object(members) = json else {
            throw HubError(.badMessage, "permissions must be an object of operation: [name patterns]")
        }
        var rules: [Operation: Rule] = [:]
        for (key, value) in members {
            if key == "deny" {
                guard case let .object(denials) = value else {
                    throw HubError(.badMessage, "permissions.deny must be an object of operation: [name patterns]")
                }
                for (operationName, patterns) in denials {
                    let operation = try Permissions.operation(operationName, in: "permissions.deny")
                    rules[operation, default: Rule()].deny += try Permissions.patterns(patterns, at: "permissions.deny.\(operationName)")
                }
                continue
            }
            let operation = try Permissions.operation(key, in: "permissions")
            rules[operation, default: Rule()].allow += try Permissions.patterns(value, at: "permissions.\(key)")
        }
        self.init(rules)
    }

    private static func operation(_ name: String, in place: String) throws(HubError) -> Operation {
        guard let operation = Operation(rawValue: name) else {
            let valid = Operation.allCases.map(\.rawValue).joined(separator: ", ")
            throw HubError(.badMessage, "\(place): unknown permission '\(name)' (valid: \(valid)\(place == "permissions" ? ", deny" : ""))")
        }
        return operation
    }

    private static func patterns(_ value: Value, at place: String) throws(HubError) -> [NamePattern] {
        guard case let .array(elements) = value else {
            throw HubError(.badMessage, "\(place) must be a list of name patterns")
        }
        var patterns: [NamePattern] = []
        for element in elements {
            guard case let .string(text) = element else {
                throw HubError(.badMessage, "\(place) must be a list of name patterns (strings)")
            }
            do {
                patterns.append(try NamePattern(text))
            } catch {
                throw HubError(.badMessage, "\(place): \(error.message)")
            }
        }
        return patterns
    }
}

/// Who a client is once authenticated: a name (for logs, budgets and per-identity limits)
/// and its ``Permissions``.
public struct Identity: Hashable, Sendable {
    /// The identity's name: a configured identity's, `jwt:SUBJECT` for a token whose
    /// claims carry permissions, or `anonymous` on a broker without authentication.
    public var name: String
    /// What it may do.
    public var permissions: Permissions
    /// The most connections it may have open at once (`nil`: the broker's default).
    public var maxConnections: Int?
    /// Whether its connections share a budget of their own (`limits.perIdentity`): a
    /// configured identity's and a JWT subject's do; `anonymous` (every client of a
    /// broker without auth) and the bare tokens of `auth.tokens` do not (each connection
    /// has only its own).
    public var hasOwnBudget: Bool

    /// An identity.
    public init(name: String, permissions: Permissions, maxConnections: Int? = nil, hasOwnBudget: Bool = true) {
        self.name = name
        self.permissions = permissions
        self.maxConnections = maxConnections
        self.hasOwnBudget = hasOwnBudget
    }

    /// Every client of a broker without authentication.
    public static let anonymous = Identity(name: "anonymous", permissions: .everything, hasOwnBudget: false)

    /// The check the operator surface (metrics and system subjects) calls for:
    /// whether this identity may see the admin resource `name` (`metrics`, `$sys.stats`, …).
    public func mayAdminister(_ name: String) -> Bool {
        permissions.allows(.admin, name)
    }
}
