import HubValue

/// Parses JSON given on the command line or on standard input, naming where a
/// bad value came from (`argument 2: byte 5: ...`, `line 3: byte 0: ...`).
enum JSONArgument {
    /// The value of `text`, or the message that names `origin` and the byte offset.
    static func parse(_ text: String, origin: String) -> Result<Value, JSONProblem> {
        do throws(JSONError) {
            return .success(try Value.parse(text))
        } catch {
            return .failure(JSONProblem(message: "\(origin): invalid JSON at byte \(error.offset): \(error.reason)"))
        }
    }

    /// A JSON text that does not parse, with the message to print.
    struct JSONProblem: Error {
        var message: String
    }
}
