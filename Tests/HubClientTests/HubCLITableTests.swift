import Foundation
import HubClient
import HubValue
import HubWire
import NetworkTestSupport
import Testing

/// A running pipeline that keeps a table subject up to date (`groupBy` a running sum
/// `into` a durable table), through real `hubcli serve` processes on one storage: after
/// `kill -9` in the middle of the input, the table comes back with every key and the
/// pipeline goes on from its checkpoint: every trade is counted exactly once, and a
/// subscriber of the table never sees a key's sum go back. `hubcli get` reads one key.
@Suite("hubcli table subjects survive kill -9 exactly once")
struct HubCLITableTests {
    static let configuration = """
        storage: {path: data}
        subjects:
          trades: {durable: true, history: {size: 10000}}
          positions: {kind: table, durable: true, maxKeys: 100, history: {size: 10000}}
        pipelines:
          book:
            run: true
            source: trades | groupBy(.symbol, scan(0, $acc + .qty)) | into(positions)
        """

    static let symbols = ["AAPL", "MSFT", "GOOG", "IBM", "ORCL"]

    /// Trade `n`: a symbol in turn, a positive quantity that varies.
    static func trade(_ n: Int) -> Value {
        ["symbol": .string(symbols[n % symbols.count]), "qty": .int(Int64(1 + (n * 7) % 13))]
    }

    /// The sums of trades `0..<count` per symbol.
    static func reference(_ count: Int) -> [String: Int64] {
        var sums: [String: Int64] = [:]
        for n in 0..<count { sums[symbols[n % symbols.count], default: 0] += trade(n)["qty"]?.intValue ?? 0 }
        return sums
    }

    static func send(_ range: Range<Int>, url: String) async throws {
        let client = try await HubClient.connect(to: url, configuration: testConfiguration())
        for n in range { try await client.send(trade(n), to: "trades") }
        await client.close()
    }

    /// Waits until every symbol's value in the table is its sum in `expected`.
    static func waitForTable(_ expected: [String: Int64], url: String, timeout: Duration = .seconds(30)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var seen: [String: Int64] = [:]
        while true {
            let client = try await HubClient.connect(to: url, configuration: testConfiguration())
            for symbol in symbols { seen[symbol] = try await client.get(.string(symbol), from: "positions")?.intValue }
            await client.close()
            if seen == expected { return }
            guard clock.now < deadline else { throw TimedOut(what: "the table \(expected), last seen \(seen)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test func aGroupedSumIntoADurableTableIsExactlyOnceAcrossKill9() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let (file, folder) = try HubCLIHistoryTests.config(Self.configuration)
        defer { try? FileManager.default.removeItem(at: folder) }
        var (server, port) = try await HubCLICheckpointTests.broker(hubcli, config: file)
        let url = "ws://127.0.0.1:\(port)/"
        let viewer = try RunningProcess(hubcli, ["subscribe", "positions", "--reconnect", "--url", url], environment: HubCLICheckpointTests.clean)

        // kill -9 right after the last acknowledged trade: the pipeline may be anywhere in it.
        try await Self.send(0..<150, url: url)
        kill(server.process.processIdentifier, SIGKILL)
        _ = try await server.finish()
        (server, _) = try await HubCLICheckpointTests.broker(hubcli, port: port, config: file)
        try await Self.waitForTable(Self.reference(150), url: url)
        try await Self.send(150..<300, url: url)
        try await Self.waitForTable(Self.reference(300), url: url)

        // hubcli get prints one key's value; a key the table does not hold is not_found (3).
        let got = try await run(hubcli, ["get", "positions", "AAPL", "--url", url])
        #expect(got.status == 0)
        #expect(got.stdout == "\(Self.reference(300)["AAPL"]!)\n")
        let missing = try await run(hubcli, ["get", "positions", "NOPE", "--url", url])
        #expect(missing.status == 3)
        #expect(missing.stderr.contains("not_found"), "\(missing.stderr)")
        let notATable = try await run(hubcli, ["get", "trades", "AAPL", "--url", url])
        #expect(notATable.status == 3)

        // The subscriber reconnected after the kill: no key's sum ever went back.
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(20))
        var last: [String: Int64] = [:]
        while clock.now < deadline {
            last = [:]
            for line in viewer.printed().stdout.split(separator: "\n") {
                guard let change = try? Value.parse(String(line)), let key = change["key"]?.stringValue,
                      let sum = change["value"]?.intValue
                else {
                    Issue.record("not a change: \(line)")
                    continue
                }
                #expect(sum >= last[key] ?? 0, "\(key) went back from \(last[key] ?? 0) to \(sum)")
                last[key] = sum
            }
            if last == Self.reference(300) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(last == Self.reference(300))
        viewer.process.terminate()
        _ = try await viewer.finish()
        server.process.terminate()
        _ = try await server.finish()
    }
}
