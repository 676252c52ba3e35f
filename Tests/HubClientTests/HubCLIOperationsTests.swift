import NetworkTestSupport
import Foundation
import HubClient
import HubValue
import Testing

/// Operating a real `hubcli serve` process: SIGHUP reload, SIGUSR2 and `hubcli drain`,
/// `stats`, `top` without a terminal, JSON logs, and the HTTP endpoints on its port.
@Suite("hubcli operations", .serialized)
struct HubCLIOperationsTests {
    static func configFile(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hub-ops-\(UInt64.random(in: 1...UInt64.max)).yml")
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    /// Waits until `/metrics` of the broker on `port` shows `count` open connections.
    static func waitForConnections(_ count: Int, port: Int) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(20))
        while !(try await HTTPTestClient.request(port: port, path: "/metrics").text)
            .split(separator: "\n").contains(where: { $0 == "hub_connections \(count)" || $0 == "hub_connections \(count).0" }) {
            guard clock.now < deadline else { throw TimedOut(what: "\(count) connections") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func sighupReloadsWithoutDroppingConnectionsAndABadFileKeepsTheOldOne() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let file = try Self.configFile("subjects:\n  prices:\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let server = try RunningProcess(hubcli, ["serve", "--port", "0", "--config", file.path])
        let port = try await server.port()
        let url = "ws://127.0.0.1:\(port)/"
        let client = try await HubClient.connect(to: url, configuration: testConfiguration())
        let subscriber = try RunningProcess(hubcli, ["subscribe", "prices", "--count", "1", "--url", url])
        try await waitForSubscribers(1, of: "prices", client: client)

        try "subjects:\n  prices:\n  news:\npipelines:\n  doubled: prices | map(. * 2)\n".write(to: file, atomically: true, encoding: .utf8)
        kill(server.process.processIdentifier, SIGHUP)
        try await server.waitForStderr(containing: "configuration reloaded")
        let catalog = try await client.list()
        #expect(catalog.pipelines.map(\.name) == ["doubled"])
        #expect(catalog.subjects.map(\.name).contains("news"))
        // The connection and its subscription went on.
        try await client.send(21, to: "prices")
        let first = try await subscriber.finish()
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout == "21\n")
        let doubled = try RunningProcess(hubcli, ["subscribe", "doubled", "--count", "1", "--url", url])
        try await waitForSubscribers(1, of: "doubled", client: client)
        try await client.send(4, to: "prices")
        #expect(try await doubled.finish().stdout == "8\n")

        try "subjects:\n  prices:\npipelines:\n  broken: prices | mapp(.)\n".write(to: file, atomically: true, encoding: .utf8)
        kill(server.process.processIdentifier, SIGHUP)
        let log = try await server.waitForStderr(containing: "reload failed")
        #expect(log.contains("\(file.path):4:"), "the error names the line: \(log)")
        #expect(try await client.list().pipelines.map(\.name) == ["doubled"])
        await client.close()
        server.process.interrupt()
        #expect(try await server.finish().status == 0)
    }

    /// `hubcli serve` runs a loop per core it may use: under `taskset -c 0`, one.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset"), "needs taskset"))
    func aPinnedBrokerRunsOneEventLoop() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let server = try RunningProcess(URL(fileURLWithPath: "/usr/bin/taskset"), ["-c", "0", hubcli.path, "serve", "--port", "0"])
        let port = try await server.port()
        let loops = try await HTTPTestClient.request(port: port, path: "/metrics").text
            .split(separator: "\n").filter { $0.hasPrefix("hub_event_loop_sessions{") }
        #expect(loops.count == 1, "\(loops)")
        #expect(loops.first?.hasPrefix(#"hub_event_loop_sessions{loop="0"}"#) == true)
        server.process.interrupt()
        #expect(try await server.finish().status == 0)
    }

    @Test func sigusr2DrainsClientsWith1012AndTheBrokerExitsCleanly() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let server = try RunningProcess(hubcli, ["serve", "--port", "0"])
        let port = try await server.port()
        let url = "ws://127.0.0.1:\(port)"
        let subscriber = try RunningProcess(hubcli, ["subscribe", "prices", "--url", url])
        let observer = try await HubClient.connect(to: url + "/", configuration: testConfiguration())
        try await waitForSubscribers(1, of: "prices", client: observer)
        await observer.close()
        // Once the broker has seen the observer go, the one client left is closed at once
        // (a second one would wait for the second half of the 30 s grace period).
        try await Self.waitForConnections(1, port: port)
        kill(server.process.processIdentifier, SIGUSR2)
        let ended = try await subscriber.finish()
        #expect(ended.status == 3, "\(ended.stderr)")
        #expect(ended.stderr.contains("shutting_down"), "\(ended.stderr)")
        let stopped = try await server.finish(timeout: .seconds(40))
        #expect(stopped.status == 0, "\(stopped.stderr)")
        #expect(stopped.stderr.contains("draining"))
        #expect(stopped.stderr.contains("code=1012"), "\(stopped.stderr)")
    }

    @Test func hubcliDrainAndTheHTTPEndpointsOfTheProcess() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let server = try RunningProcess(hubcli, ["serve", "--port", "0"])
        let port = try await server.port()
        let url = "ws://127.0.0.1:\(port)"
        #expect(try await HTTPTestClient.request(port: port, path: "/health").status == 200)
        #expect(try await HTTPTestClient.request(port: port, path: "/ready").status == 200)
        #expect(try await HTTPTestClient.request(port: port, path: "/metrics").text.contains("hub_connections"))
        // A client that the drain moves away: its subscription ends with shutting_down
        // and its connection closes with 1012 (the broker logs the close code).
        let subscriber = try RunningProcess(hubcli, ["subscribe", "prices", "--url", url])
        let observer = try await HubClient.connect(to: url + "/", configuration: testConfiguration())
        try await waitForSubscribers(1, of: "prices", client: observer)
        await observer.close()
        let drained = try await run(hubcli, ["drain", "--grace", "1", "--url", url])
        #expect(drained.status == 0, "\(drained.stderr)")
        #expect(drained.stderr.contains("draining"))
        let ended = try await subscriber.finish()
        #expect(ended.status == 3, "\(ended.stderr)")
        #expect(ended.stderr.contains("shutting_down"), "\(ended.stderr)")
        let stopped = try await server.finish(timeout: .seconds(40))
        #expect(stopped.status == 0, "\(stopped.stderr)")
        #expect(stopped.stderr.contains("draining"))
        #expect(stopped.stderr.contains("requested_by=client"), "\(stopped.stderr)")
        #expect(stopped.stderr.contains("code=1012"), "\(stopped.stderr)")
    }

    @Test func statsTopAndJSONLogs() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let server = try RunningProcess(hubcli, ["serve", "--port", "0", "--log-format", "json"])
        let port = try await server.port()
        let url = "ws://127.0.0.1:\(port)"
        #expect(try await run(hubcli, ["send", "prices", "1", "2", "--url", url]).status == 0)

        let stats = try await run(hubcli, ["stats", "--json", "--url", url])
        #expect(stats.status == 0, "\(stats.stderr)")
        let value = try Value.parse(stats.stdout)
        #expect(value["totals"]?["connectionsOpened"]?.intValue ?? 0 >= 1)
        let table = try await run(hubcli, ["stats", "--url", url])
        #expect(table.stdout.contains("connections"))
        #expect(table.stdout.contains("pipeline failures 0 (named pipelines 0)"), "\(table.stdout)")
        #expect(table.stdout.contains("rate-limit closes 0  connections refused 0"), "\(table.stdout)")
        #expect(table.stdout.contains("NAME"))

        // Not a terminal: plain lines, no control characters, --count stops it.
        let top = try await run(hubcli, ["top", "--count", "2", "--url", url])
        #expect(top.status == 0, "\(top.stderr)")
        #expect(!top.stdout.contains("\u{1B}"))
        #expect(top.stdout.components(separatedBy: "uptime").count == 3)

        server.process.interrupt()
        let stopped = try await server.finish()
        // Every log line is one JSON object (the listening line is hubcli's own status).
        let lines = stopped.stderr.split(separator: "\n").filter { !$0.hasPrefix("hubcli:") }
        #expect(lines.count >= 4)
        for line in lines {
            let entry = try Value.parse(String(line))
            #expect(entry["level"]?.stringValue != nil && entry["message"]?.stringValue != nil, "\(line)")
        }
        #expect(lines.contains { (try? Value.parse(String($0)))?["message"] == "connection opened" })
        #expect(lines.contains { (try? Value.parse(String($0)))?["message"] == "connection closed" })
    }
}
