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

    /// The package's root directory.
    public static let packageRoot = URL(fileURLWithPath: #filePath)
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
}
