import Yams

/// A mistake in a broker configuration file: where it is and what is wrong.
///
/// Its description is `file:line:column: key.path: message`, for example
/// `hub.yml:12:5: subjects.prices.overflow: expected one of error, dropOldest, dropNewest, latest`
/// (the key path is left out for a mistake that is not under a key, such as
/// YAML that does not parse). Lines and columns are 1-based; columns count
/// Unicode scalars, as libyaml does.
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file, as named to the loader (or the name given with the text).
    public var file: String
    /// The line of the offending key or value (1-based).
    public var line: Int
    /// The column of the offending key or value (1-based).
    public var column: Int
    /// The key path, such as `subjects.prices.overflow` or `auth.tokens[1]`; empty for the document.
    public var path: String
    /// What is wrong, and what was expected.
    public var message: String

    /// An error at `line`:`column` of `file`, under `path`.
    public init(file: String, line: Int, column: Int, path: String, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.path = path
        self.message = message
    }

    /// `file:line:column: path: message`.
    public var description: String {
        path.isEmpty ? "\(file):\(line):\(column): \(message)" : "\(file):\(line):\(column): \(path): \(message)"
    }
}

extension ConfigurationError {
    /// An error at a position of the file.
    init(file: String, at position: BrokerConfiguration.SourceSegment, path: String, message: String) {
        self.init(file: file, line: position.line, column: position.column, path: path, message: message)
    }

    /// A YAML syntax error, at its mark.
    init(yaml error: YamlError, file: String) {
        switch error {
        case .scanner(let context, let problem, let mark, _),
             .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            let detail = context.map { "\(problem) (\($0.text) at \($0.mark.line):\($0.mark.column))" } ?? problem
            self.init(file: file, line: mark.line, column: mark.column, path: "", message: "invalid YAML: \(detail)")
        case .reader(let problem, _, _, _):
            self.init(file: file, line: 1, column: 1, path: "", message: "invalid YAML: \(problem)")
        default:
            self.init(file: file, line: 1, column: 1, path: "", message: "invalid YAML: \(error)")
        }
    }
}
