import ArgumentParser

/// A failure hubcli reports on standard error before exiting with `exitCode`.
struct CLIError: Error, CustomStringConvertible {
    /// What went wrong, naming the offending part.
    var message: String
    /// The process exit status.
    var exitCode: Int32

    init(_ message: String, exitCode: Int32 = 1) {
        self.message = message
        self.exitCode = exitCode
    }

    var description: String { message }
}
