import Foundation
import HubValue

/// Parses JSON given on the command line or on standard input, naming where a
/// bad value came from (`argument 2: byte 5: ...`, `line 3: byte 0: ...`).
enum JSONArgument {
    /// The value of `text`, or the message that names `origin` and the byte offset
    /// (with a hint when `text` looks like a string written without JSON quotes:
    /// quoted for the shell when `text` is a command-line argument).
    static func parse(_ text: String, origin: String, argument: Bool = true) -> Result<Value, JSONProblem> {
        do throws(JSONError) {
            return .success(try Value.parse(text))
        } catch {
            var message = "\(origin): invalid JSON at byte \(error.offset): \(error.reason)"
            if let hint = quotingHint(text, shell: argument) { message += " (\(hint))" }
            return .failure(JSONProblem(message: message))
        }
    }

    /// For text that is not JSON but reads as a word or a sentence (`hello`,
    /// `feed down`): how to write it as a JSON string (on a shell command line).
    static func quotingHint(_ text: String, shell: Bool) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let first = trimmed.unicodeScalars.first else { return nil }
        // JSON that is merely broken ({…, […, "…, numbers) needs fixing, not quoting.
        if "{[\"-0123456789".unicodeScalars.contains(first) { return nil }
        let json = Value.string(text).jsonString()
        let written = !shell || text.contains("'") ? json : "'\(json)'"
        return "a string needs JSON quotes: \(written)"
    }

    /// A JSON text that does not parse, with the message to print.
    struct JSONProblem: Error {
        var message: String
    }
}
