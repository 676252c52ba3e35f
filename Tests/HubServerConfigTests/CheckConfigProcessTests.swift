import Foundation
import NetworkTestSupport
import Testing

/// `hubcli serve --check-config` as a process (the hubcli executable SwiftPM builds beside the tests).
@Suite("hubcli serve --check-config")
struct CheckConfigProcessTests {
    static let packageRoot = HubCLIExecutable.packageRoot

    @Test func theExampleIsOk() async throws {
        let path = Self.packageRoot.appendingPathComponent("examples/hub.yml").path
        let outcome = try await HubCLIExecutable.run(["serve", "--config", path, "--check-config"])
        #expect(outcome.status == 0)
        #expect(outcome.output == "\(path): ok\n")
    }

    @Test func aBadFileIsReportedAndExitsOne() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hub-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("hub.yml")
        try "subjects:\n  prices:\n    overflow: fast\n".write(to: file, atomically: true, encoding: .utf8)
        let outcome = try await HubCLIExecutable.run(["serve", "--config", file.path, "--check-config"])
        #expect(outcome.status == 1)
        #expect(outcome.output.isEmpty)
        #expect(outcome.errors.contains(
            "\(file.path):3:15: subjects.prices.overflow: expected one of error, dropOldest, dropNewest, latest, block (got \"fast\")\n"))

        // Compiling against the hub is part of the check.
        try "autoCreate: false\npipelines:\n  p: ghost\n".write(to: file, atomically: true, encoding: .utf8)
        let unresolved = try await HubCLIExecutable.run(["serve", "--config", file.path, "--check-config"])
        #expect(unresolved.status == 1)
        #expect(unresolved.errors.contains("\(file.path):3:6: pipelines.p: no subject named 'ghost'\n"))
    }

    @Test func eventLoopsOutOfRangeIsAUsageErrorNamingTheRange() async throws {
        let outcome = try await HubCLIExecutable.run(["serve", "--port", "0", "--event-loops", "0"])
        #expect(outcome.status == 64)
        #expect(outcome.errors.contains("--event-loops must be between 1 and 256, got 0"), "\(outcome.errors)")
    }

    @Test func checkConfigNeedsAFile() async throws {
        let outcome = try await HubCLIExecutable.run(["serve", "--check-config"])
        #expect(outcome.status != 0)
        #expect(outcome.errors.contains("--check-config needs --config FILE"))
    }
}
