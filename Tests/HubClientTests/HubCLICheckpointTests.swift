import Foundation
import HubClient
import HubValue
import HubWire
import NetworkTestSupport
import RemoteTestSupport
import Testing

/// A running pipeline that keeps a view up to date (the todo reducer of examples/todo,
/// shortened) through real `hubcli serve` processes on one storage: after `kill -9`, a
/// clean stop and reloads of its configuration, with the same text and with a changed
/// one, it goes on from its checkpointed state. A subscriber of the view follows it
/// throughout and never sees it go back, and every todo sent is in it exactly once.
@Suite("hubcli running pipelines resume from their checkpoints")
struct HubCLICheckpointTests {
    static let clean = HubCLIShellTests.clean

    static let reducer = """
        input
              | scan({todos: []}, .type == "todoAdded" ? {todos: append($acc.todos, .title)} : $acc)
              | into(viewState)
        """

    static func configuration(reducer: String = reducer, extra: String = "") -> String {
        """
        storage: {path: data}
        subjects:
          input: {durable: true, history: {size: 1000}}
          viewState: {durable: true, initial: {todos: []}}
        pipelines:
          reducer:
            run: true
        \(extra)    source: |
              \(reducer)
        """
    }

    /// Starts `hubcli serve` on `port` (0: an ephemeral one) with `file`, logging notices.
    static func broker(_ hubcli: URL, port: Int = 0, config file: String) async throws -> (RunningProcess, Int) {
        var attempt = 1
        while true {
            let server = try RunningProcess(hubcli, ["serve", "--port", String(port), "--config", file], environment: clean)
            do {
                return (server, try await server.port())
            } catch let ended as StandardErrorEnded where port != 0 && attempt < 100 && ended.seen.contains("address already in use") {
                _ = try await server.finish()
                try await Task.sleep(for: .milliseconds(100))
                attempt += 1
            }
        }
    }

    /// The titles of the todos in the view `value`.
    static func titles(_ value: Value?) -> [String] {
        value?["todos"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// Waits until the current value of `viewState` holds `expected`.
    static func waitForView(_ expected: [String], url: String, timeout: Duration = .seconds(30)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var seen: [String] = []
        while true {
            let client = try await HubClient.connect(to: url, configuration: testConfiguration())
            seen = titles(try await client.list().subjects.first { $0.name == "viewState" }?.value)
            await client.close()
            if seen == expected { return }
            guard clock.now < deadline else { throw TimedOut(what: "the view \(expected), last seen \(seen)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Sends a todo (acknowledged: stored) into `input`.
    static func add(_ title: String, url: String) async throws {
        let client = try await HubClient.connect(to: url, configuration: testConfiguration())
        try await client.send(["type": "todoAdded", "title": .string(title)], to: "input")
        await client.close()
    }

    /// Checks that every view a subscriber saw extends the one before it (it never went back).
    static func expectNeverWentBack(_ printed: String, sourceLocation: SourceLocation = #_sourceLocation) {
        var previous: [String] = []
        for line in printed.split(separator: "\n") {
            guard let value = try? Value.parse(String(line)) else {
                Issue.record("not a view: \(line)", sourceLocation: sourceLocation)
                continue
            }
            let current = titles(value)
            #expect(Array(current.prefix(previous.count)) == previous, "the view went back from \(previous) to \(current)", sourceLocation: sourceLocation)
            previous = current
        }
    }

    @Test func theTodoViewResumesAcrossKill9StopAndReloads() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let (file, folder) = try HubCLIHistoryTests.config(Self.configuration())
        defer { try? FileManager.default.removeItem(at: folder) }
        var (server, port) = try await Self.broker(hubcli, config: file)
        let url = "ws://127.0.0.1:\(port)/"
        let viewer = try RunningProcess(hubcli, ["subscribe", "viewState", "--reconnect", "--url", url], environment: Self.clean)

        for title in ["a", "b", "c"] { try await Self.add(title, url: url) }
        try await Self.waitForView(["a", "b", "c"], url: url)

        // kill -9: the reducer's state comes back from its checkpoint, not from scratch.
        kill(server.process.processIdentifier, SIGKILL)
        _ = try await server.finish()
        (server, _) = try await Self.broker(hubcli, port: port, config: file)
        try await Self.waitForView(["a", "b", "c"], url: url)
        try await Self.add("d", url: url)
        try await Self.waitForView(["a", "b", "c", "d"], url: url)

        // A clean stop (SIGTERM): the same.
        server.process.terminate()
        _ = try await server.finish()
        (server, _) = try await Self.broker(hubcli, port: port, config: file)
        try await Self.add("e", url: url)
        try await Self.waitForView(["a", "b", "c", "d", "e"], url: url)

        // A reload with the same text keeps the pipeline running as it is.
        kill(server.process.processIdentifier, SIGHUP)
        try await server.waitForStderr(containing: "configuration reloaded")
        try await Self.add("f", url: url)
        try await Self.waitForView(["a", "b", "c", "d", "e", "f"], url: url)

        // A changed text starts afresh (restartFrom: beginning, the default): it rebuilds its
        // state from the input's history without writing the views it wrote already.
        let changed = Self.reducer.replacingOccurrences(of: "$acc)", with: "$acc)\n      | removeDuplicates()")
        try Self.configuration(reducer: changed).write(toFile: file, atomically: true, encoding: .utf8)
        kill(server.process.processIdentifier, SIGHUP)
        let log = try await server.waitForStderr(containing: "running pipeline starts afresh")
        #expect(log.contains("restartFrom=beginning"), "\(log)")
        try await Self.add("g", url: url)
        try await Self.waitForView(["a", "b", "c", "d", "e", "f", "g"], url: url)
        // The subscriber reconnects after each restart with a back-off: it catches up in time.
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(20))
        while Self.titles(try? Value.parse(String(viewer.printed().stdout.split(separator: "\n").last ?? ""))).count < 7,
              clock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }

        server.process.terminate()
        _ = try await server.finish()
        viewer.process.terminate()
        let seen = try await viewer.finish()
        Self.expectNeverWentBack(seen.stdout)
        #expect(Self.titles(try? Value.parse(String(seen.stdout.split(separator: "\n").last ?? ""))) == ["a", "b", "c", "d", "e", "f", "g"],
                "the subscriber saw:\n\(seen.stdout)\nstderr:\n\(seen.stderr)")
    }

    // MARK: Killed at random moments

    /// The history of the durable subject `name`: every value kept, from the first.
    static func history(of name: String, url: String) async throws -> [Value] {
        let client = try await HubClient.connect(to: url, configuration: testConfiguration())
        defer { Task { await client.close() } }
        let recorder = EntryRecorder(demand: .unlimited)
        client.subscribe(to: name, options: SubscribeOptions(since: .offset(0, epoch: nil))).entries.subscribe(recorder)
        var values: [Value] = []
        while true {
            do {
                let entry = try await recorder.entries(1, timeout: .seconds(2))[0]
                #expect(entry.offset == UInt64(values.count + 1), "\(name) has a gap before \(entry.offset ?? 0)")
                values.append(entry.value)
            } catch is TimedOut {
                recorder.cancel()
                return values
            }
        }
    }

    @Test func killedAtRandomMomentsARunningPipelineCountsEveryInputOnce() async throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SplitMix(seed: seed)
        let hubcli = try HubCLIExecutable.locate()
        let (file, folder) = try HubCLIHistoryTests.config("""
            storage: {path: data, sync: normal}
            subjects:
              nums: {durable: true, history: {size: 100000}}
              totals: {durable: true, history: {size: 100000}}
            pipelines:
              counter:
                run: true
                # Checkpoints far apart: most kills land between two, and the restart replays.
                checkpoint: {every: 50, interval: 200ms}
                source: "nums | scan({n: 0, s: 0}, {n: $acc.n + 1, s: $acc.s + .}) | into(totals)"
            """)
        defer { try? FileManager.default.removeItem(at: folder) }
        var (server, port) = try await Self.broker(hubcli, config: file)
        let url = "ws://127.0.0.1:\(port)/"

        // A publisher sends 1, 2, 3… each acknowledged; when the broker dies under it, it
        // reconnects and sends the number again (the one in flight may have been stored:
        // the reference is what the input's history holds).
        let sent = 1500
        let publisher = Task {
            var client: HubClient?
            for number in 1...sent {
                var attempts = 0
                while true {
                    do {
                        if client == nil { client = try await HubClient.connect(to: url, configuration: testConfiguration()) }
                        try await client!.send(.int(Int64(number)), to: "nums")
                        break
                    } catch {
                        await client?.close()
                        client = nil
                        attempts += 1
                        // The broker restarts within a second; a value sent twice (its ack lost
                        // with the broker) is two inputs, which the reference counts.
                        if attempts > 250 { break }
                        try await Task.sleep(for: .milliseconds(20))
                    }
                }
            }
            await client?.close()
        }
        var kills = 0
        while kills < 6 {
            try await Task.sleep(for: .milliseconds(Int64(random.next() % 400 + 50)))
            kill(server.process.processIdentifier, SIGKILL)
            _ = try await server.finish()
            kills += 1
            (server, _) = try await Self.broker(hubcli, port: port, config: file)
        }
        try await publisher.value
        defer { server.process.terminate() }

        // Once the pipeline has caught up, its outputs are the running count and sum of the
        // input, one output for each input, in order: nothing counted twice, nothing missed.
        let inputs = try await Self.history(of: "nums", url: url)
        #expect(inputs.count > sent / 2, "seed \(seed)")
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(30))
        var outputs: [Value] = []
        while true {
            outputs = try await Self.history(of: "totals", url: url)
            if outputs.count >= inputs.count || clock.now > deadline { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        var expected: [Value] = []
        var sum: Int64 = 0
        for (index, input) in inputs.enumerated() {
            sum += input.intValue ?? 0
            expected.append(["n": .int(Int64(index + 1)), "s": .int(sum)])
        }
        #expect(outputs.count == expected.count, "seed \(seed): \(outputs.count) outputs for \(expected.count) inputs")
        let firstDifference = zip(outputs, expected).enumerated().first { $1.0 != $1.1 }
        #expect(firstDifference == nil, "seed \(seed): output \(firstDifference?.offset ?? 0) is \(firstDifference.map { "\($0.element.0)" } ?? ""), expected \(firstDifference.map { "\($0.element.1)" } ?? "")")
    }
}

/// SplitMix64: kill moments that a failing run's seed replays.
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
