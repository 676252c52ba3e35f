import HubValue

/// A place in pipeline source text: 1-based line and column (columns count
/// Unicode scalars), and the 0-based UTF-8 offset.
public struct SourcePosition: Hashable, Sendable, CustomStringConvertible {
    /// The 1-based line.
    public var line: Int
    /// The 1-based column.
    public var column: Int
    /// The 0-based UTF-8 offset from the start of the text.
    public var offset: Int

    /// A position at `line`:`column`, `offset` bytes into the text.
    public init(line: Int, column: Int, offset: Int) {
        self.line = line
        self.column = column
        self.offset = offset
    }

    /// The start of the text.
    public static let start = SourcePosition(line: 1, column: 1, offset: 0)

    /// `line:column`.
    public var description: String { "\(line):\(column)" }
}

/// The syntax tree of a pipeline: `stage ("|" stage)*`.
public struct PipelineSyntax: Hashable, Sendable {
    /// The stages in order; the first is the source.
    public var stages: [StageSyntax]
    /// Where the pipeline starts.
    public var position: SourcePosition

    /// A pipeline of `stages` starting at `position`.
    public init(stages: [StageSyntax], position: SourcePosition) {
        self.stages = stages
        self.position = position
    }
}

/// One stage: `NAME` or `NAME(arg, ...)`.
public struct StageSyntax: Hashable, Sendable {
    /// The stage's name (a source, an operator, or a subject's name when bare).
    public var name: String
    /// The arguments; `nil` for a bare name (no parentheses).
    public var arguments: [ArgumentSyntax]?
    /// Where the stage's name starts.
    public var position: SourcePosition
    /// The stage's text as written (used in runtime error messages).
    public var text: String

    /// A stage named `name` with `arguments` (`nil` when bare).
    public init(name: String, arguments: [ArgumentSyntax]?, position: SourcePosition, text: String) {
        self.name = name
        self.arguments = arguments
        self.position = position
        self.text = text
    }
}

/// One argument of a stage or function: an optional `label:` and its value.
public struct ArgumentSyntax: Hashable, Sendable {
    /// What an argument holds.
    public indirect enum Kind: Hashable, Sendable {
        /// An expression (a bare name or a call may still denote a one-stage pipeline).
        case expression(ExpressionSyntax)
        /// A pipeline of two or more stages (`a | b`).
        case pipeline(PipelineSyntax)
        /// A duration such as `250ms`.
        case duration(Duration)
    }

    /// The label before a colon (`where: . > 1`), if any.
    public var label: String?
    /// The argument's value.
    public var kind: Kind
    /// Where the argument starts (after its label).
    public var position: SourcePosition

    /// An argument.
    public init(label: String?, kind: Kind, position: SourcePosition) {
        self.label = label
        self.kind = kind
        self.position = position
    }
}

/// An expression over the current value, with its position.
public struct ExpressionSyntax: Hashable, Sendable {
    /// Binary operators.
    public enum BinaryOperator: String, Hashable, Sendable {
        /// `+`: numbers, or two strings, or two arrays.
        case add = "+"
        /// `-`
        case subtract = "-"
        /// `*`
        case multiply = "*"
        /// `/`: an integer when exact, else a double.
        case divide = "/"
        /// `%`: integers, truncating toward zero.
        case remainder = "%"
        /// `==`: any values, numbers by value.
        case equal = "=="
        /// `!=`
        case notEqual = "!="
        /// `<`: two numbers or two strings.
        case less = "<"
        /// `<=`
        case lessOrEqual = "<="
        /// `>`
        case greater = ">"
        /// `>=`
        case greaterOrEqual = ">="
        /// `and` (short-circuit, gives a boolean).
        case and
        /// `or` (short-circuit, gives a boolean).
        case or
    }

    /// The forms of expressions.
    public indirect enum Kind: Hashable, Sendable {
        /// `.`: the current value.
        case current
        /// `$name`, e.g. `$acc`.
        case variable(String)
        /// A bare name: a lambda parameter (or, where a pipeline is expected, a one-stage pipeline).
        case name(String)
        /// A JSON literal.
        case literal(Value)
        /// `base.field` (also `.field`).
        case field(ExpressionSyntax, String)
        /// `base[index]` (also `.[index]`).
        case index(ExpressionSyntax, ExpressionSyntax)
        /// Unary minus.
        case negate(ExpressionSyntax)
        /// `not e`.
        case not(ExpressionSyntax)
        /// `l op r`.
        case binary(BinaryOperator, ExpressionSyntax, ExpressionSyntax)
        /// `c ? a : b`.
        case conditional(ExpressionSyntax, ExpressionSyntax, ExpressionSyntax)
        /// `[e, ...]`.
        case array([ExpressionSyntax])
        /// `{key: e, ...}`.
        case object([ObjectMember])
        /// `name(arg, ...)`: a function (or, where a pipeline is expected, a stage).
        case call(String, [ArgumentSyntax], text: String)
        /// `x -> body`: a lambda (only as a function argument).
        case lambda(String, ExpressionSyntax)
        /// `(a | b)`: a pipeline in parentheses, only where a pipeline is expected (a branch
        /// of `c ? p : q` choosing a pipeline in `flatMap` or `switchToLatest`).
        case pipeline(PipelineSyntax)
    }

    /// One `key: value` of an object constructor.
    public struct ObjectMember: Hashable, Sendable {
        /// The member's key.
        public var key: String
        /// The member's value.
        public var value: ExpressionSyntax

        /// A member.
        public init(key: String, value: ExpressionSyntax) {
            self.key = key
            self.value = value
        }
    }

    /// The expression's form.
    public var kind: Kind
    /// Where it starts.
    public var position: SourcePosition

    /// An expression of `kind` at `position`.
    public init(_ kind: Kind, at position: SourcePosition) {
        self.kind = kind
        self.position = position
    }
}
