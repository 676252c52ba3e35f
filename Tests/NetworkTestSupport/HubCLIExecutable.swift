import Foundation

/// The `hubcli` executable that SwiftPM builds beside the test bundle (the test targets
/// that run it as a process depend on it).
///
/// ``locate()`` throws when it is not there: a missing binary fails the process tests,
/// it never turns them into skips.
public enum HubCLIExecutable {
    /// Why the executable was not found: the paths that were tried.
    public struct Missing: Error, CustomStringConvertible {
        /// Every path tried, in order.
        public let tried: [String]
        public var description: String {
            "no hubcli executable beside the tests (tried \(tried.joined(separator: ", "))); "
                + "build it with `swift build --product hubcli`"
        }
    }

    /// The package's root directory (this file's, with symlinks resolved: the
    /// Sanitizers package builds these sources through a symlink).
    public static let packageRoot = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The executable's URL, or ``Missing``.
    public static func locate() throws -> URL {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL {
            candidates.append(executable.deletingLastPathComponent().appendingPathComponent("hubcli"))
        }
        candidates.append(
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("hubcli"))
        candidates.append(packageRoot.appendingPathComponent(".build/debug/hubcli"))
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) {
            return found
        }
        throw Missing(tried: candidates.map(\.path))
    }

    /// What a `hubcli` run that exits by itself printed, and its status.
    public struct Outcome: Sendable {
        /// The exit status.
        public var status: Int32
        /// Standard output.
        public var output: String
        /// Standard error.
        public var errors: String
    }

    /// Runs `hubcli` with `arguments` to its exit, on a thread of its own (see ``Blocking``).
    public static func run(_ arguments: [String]) async throws -> Outcome {
        let executable = try locate()
        return try await Blocking.run {
            let process = ChildProcess()
            process.executableURL = executable
            process.arguments = arguments
            let output = Pipe()
            let errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            process.standardInput = FileHandle.nullDevice
            try process.run()
            ChildProcesses.killAtExit(process.processIdentifier)
            // Standard error is read on another thread: a child that fills one pipe
            // while the other is being read must not stall.
            let err = LockedData()
            let readErrors = Thread { err.set(errors.fileHandleForReading.readDataToEndOfFile()) }
            readErrors.start()
            let out = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            ChildProcesses.forget(process.processIdentifier)
            return Outcome(
                status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
                errors: String(decoding: err.wait(), as: UTF8.self))
        }
    }
}

/// Data one thread reads and another waits for.
private final class LockedData: @unchecked Sendable {
    private let condition = NSCondition()
    private var data: Data?

    func set(_ value: Data) {
        condition.lock()
        data = value
        condition.broadcast()
        condition.unlock()
    }

    func wait() -> Data {
        condition.lock()
        defer { condition.unlock() }
        while data == nil { condition.wait() }
        return data!
    }
}
