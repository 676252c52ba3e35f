import Foundation

/// What `hubcli --version` reports: the release, from the repository's `VERSION` file,
/// and the commit the binary was built from.
///
/// The release is compiled in from `VERSION` (this target's `VERSION` is a link to it,
/// embedded with SwiftPM's `embedInCode` resource rule), so every build, `swift build`
/// included, prints the file as it is.
///
/// SwiftPM has no way to hand a build the current commit without a plugin or unsafe
/// flags, and what a manifest computes is cached past a new commit. So the commit is a
/// stamp: `scripts/package` writes `BuildStamp.swift` (ignored by git) into this
/// target for the release build it packages and removes it after, and the file makes
/// ``BuildInfo`` conform to ``BuildStamp``. Without the file the commit is `unknown`:
/// a binary never names a commit it was not built from.
enum BuildInfo {
    /// The release, e.g. `0.9.0`.
    static let version = String(decoding: PackageResources.VERSION, as: UTF8.self)
        .trimmingCharacters(in: .whitespacesAndNewlines)

    /// The commit's short hash, with `-dirty` when the work tree had changes, or `unknown`.
    static var commit: String {
        (BuildInfo.self as Any as? BuildStamp.Type)?.stampedCommit ?? "unknown"
    }

    /// `hubcli --version`'s line, e.g. `hubcli 0.9.0 (commit 1a2b3c4, protocol v1)`.
    static var versionLine: String {
        "hubcli \(version) (commit \(commit), protocol v1)"
    }
}

/// The commit a packaged build was made from: `BuildStamp.swift`, written by
/// `scripts/package`, makes ``BuildInfo`` conform.
protocol BuildStamp {
    /// The commit's short hash, with `-dirty` when the work tree had changes.
    static var stampedCommit: String { get }
}
