import HubEngine
import HubValue
import HubWire

/// Compiles pipeline source text into a publisher of ``Value``s.
///
/// ```swift
/// let publisher = try PipelineCompiler.compile("orders | filter(.qty > 100) | map(.qty * .price)",
///                                              environment: hub)
/// ```
///
/// Text that does not compile throws `pipeline_error` with `data`
/// `{"line": L, "column": C}` and a message `L:C: what went wrong`. A name the
/// environment does not know throws the environment's own error (`not_found`).
/// At run time, a type error, a division by zero or an integer overflow in an
/// expression fails the subscription with `failed` (see Protocol/PIPELINES.md).
public enum PipelineCompiler {
    /// The bytes a compiled pipeline (its syntax tree, constants and closures) is counted
    /// for in a ``ResourceBudget``, per byte of its text.
    public static let compiledBytesPerSourceByte = 12

    /// The syntax tree of `source`, checked for syntax and for the length, stage
    /// and depth `limits` only (no names are resolved): for validating configuration.
    public static func parse(_ source: String, limits: PipelineLimits = PipelineLimits()) throws(HubError) -> PipelineSyntax {
        try PipelineParser.parse(source, limits: limits)
    }

    /// Parses `source` and compiles it against `environment`'s sources,
    /// triggers, scheduler and limits.
    public static func compile(
        _ source: String, environment: some PipelineEnvironment, outer: Value = .null
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        let syntax = try PipelineParser.parse(source, limits: environment.limits)
        return try compile(syntax, environment: environment, outer: outer)
    }

    /// Compiles an already parsed pipeline against `environment`; `.` in its top-level
    /// arguments is `outer` (the argument of a named pipeline called as `name(argument)`).
    public static func compile(
        _ syntax: PipelineSyntax, environment: some PipelineEnvironment, outer: Value = .null
    ) throws(HubError) -> AnyPublisher<Value, HubError> {
        let builder = PipelineBuilder(environment: environment)
        let build = try builder.pipeline(syntax)
        do {
            return try build(outer)
        } catch where error.code == .failed {
            // An argument that failed to evaluate while building: a compile error here.
            let line = error.data?["line"]?.intValue ?? 1
            let column = error.data?["column"]?.intValue ?? 1
            throw PipelineLexer.error(
                error.data?["error"]?.stringValue ?? error.message,
                at: SourcePosition(line: Int(line), column: Int(column), offset: 0))
        }
    }
}
