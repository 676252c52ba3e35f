import ArgumentParser
import Foundation
import HubEngine
import HubLoop
import HubValue
import HubServer
import HubTransport
import Logging

/// `hubcli bench`: measures the broker's fan-out: one publisher connection sending into
/// one subject, S subscriber connections with unlimited demand, published and
/// delivered messages a second and the publish-to-receive latency.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure the broker's fan-out throughput and latency.",
        discussion: """
            Runs a broker in-process (HubService on 127.0.0.1, its own event loop thread)
            unless --url names one on this machine. The load generator runs on its own
            event loop(s): one publisher connection sends values of about --sizes bytes
            into one subject; --subscribers connections subscribe to it with unlimited
            demand. Each value carries its publish time (CLOCK_MONOTONIC), so a
            subscriber measures the latency from publish to receive.

            Modes: 'max' publishes as fast as the broker takes it (an ack every
            --ack-every messages bounds the unacknowledged window, and the publisher
            never runs more than --window messages ahead of the slowest subscriber);
            'rate' publishes --rate messages a second, each sent when due on the
            publisher's loop timer (a message due while the slowest subscriber is
            --window messages behind is skipped: the published rate shows it). --large adds a case that times a 1 MiB value from
            publish to receive, one at a time.

            Prints one line per case, then one JSON line with every case's figures.
            """
    )

    @Option(help: "A running broker to measure (ws://127.0.0.1:PORT/); default: one in this process.")
    var url: String?

    @Option(help: "Subscriber counts, comma-separated.")
    var subscribers = "1,10,100"

    @Option(help: "Approximate JSON sizes of the published values (bytes), comma-separated.")
    var sizes = "64,16384"

    @Option(help: "Modes to run, comma-separated: max, rate.")
    var modes = "max,rate"

    @Option(help: "Messages a second published in 'rate' mode.")
    var rate: Double = 1000

    @Option(help: "Seconds measured per case.")
    var duration: Double = 5

    @Option(help: "Seconds of load before each measurement starts.")
    var warmup: Double = 1

    @Flag(help: "Subscribe with the batch form of next (values).")
    var batch = false

    @Flag(help: "Add the large-value case: a 1 MiB value to one subscriber, timed end to end.")
    var large = false

    @Flag(help: "Run only the large-value case.")
    var largeOnly = false

    @Option(help: "Round trips of the large-value case.")
    var largeCount = 30

    @Option(help: "The most messages in flight (unacknowledged, or ahead of the slowest subscriber; at most 8 MiB of values).")
    var window = 2000

    @Option(help: "'max' mode: every N-th send carries an ack.")
    var ackEvery = 100

    @Option(help: "The published values: object ({\"ts\":…,\"pad\":\"…\"}) or string (\"ts:…;…\").")
    var shape: String = "object"

    @Option(help: "How subscribers read timestamps: scan (memchr and memcmp for the marker) or value (Value.parse of each message).")
    var parse: String = "scan"

    @Option(help: "Event loops (threads) of the load generator; with more than one, the publisher has the first to itself.")
    var clientLoops = 1

    @Option(help: "Log level of the in-process broker and the transport.")
    var logLevel: Logger.Level = .warning

    func validate() throws {
        guard duration > 0, warmup >= 0 else { throw ValidationError("--duration must be > 0 and --warmup ≥ 0") }
        guard rate > 0 else { throw ValidationError("--rate must be > 0") }
        guard window > ackEvery, ackEvery > 0 else { throw ValidationError("--window must exceed --ack-every (> 0)") }
        guard (1...16).contains(clientLoops) else { throw ValidationError("--client-loops must be 1…16") }
        guard BenchShape(rawValue: shape) != nil else { throw ValidationError("--shape must be object or string") }
        guard BenchParse(rawValue: parse) != nil else { throw ValidationError("--parse must be scan or value") }
        _ = try Bench.integers(subscribers, "--subscribers")
        _ = try Bench.integers(sizes, "--sizes")
        for mode in modes.split(separator: ",") where mode != "max" && mode != "rate" {
            throw ValidationError("--modes: unknown mode '\(mode)' (max, rate)")
        }
        if let url { _ = try Bench.target(url) }
    }

    func run() async throws {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let shape = BenchShape(rawValue: shape)!
        let parse = BenchParse(rawValue: parse)!
        var service: HubService?
        let target: BenchTarget
        if let url {
            target = try Bench.target(url)
        } else {
            // Large enough for the 1 MiB value inside its send message.
            let configuration = HubService.Configuration(host: "127.0.0.1", port: 0, maxMessageSize: 8 << 20)
            let started = try HubService(configuration: configuration, logger: Logger(label: "hubcli.bench.server"))
            let port = try await started.start()
            service = started
            target = BenchTarget(host: "127.0.0.1", port: port, path: "/")
        }
        let loops = try (0..<clientLoops).map { try BenchLoop(name: "bench-load-\($0)") }
        let loadBefore = Bench.loadAverage()
        Bench.emit("hubcli bench: \(url ?? "in-process broker ws://127.0.0.1:\(target.port)/"), "
              + "\(clientLoops) load loop(s), \(ProcessInfo.processInfo.activeProcessorCount) cores, "
              + "load average \(loadBefore.map { String(format: "%.2f", $0) }.joined(separator: " "))")

        var results: [BenchResult] = []
        var caseNumber = 0
        if !largeOnly {
            for mode in modes.split(separator: ",").map(String.init) {
                for size in try Bench.integers(sizes, "--sizes") {
                    for count in try Bench.integers(subscribers, "--subscribers") {
                        caseNumber += 1
                        // At most about 8 MiB in flight per subscriber (the broker closes a
                        // connection with 16 MiB queued).
                        let window = min(self.window, max(ackEvery + 1, (8 << 20) / max(size, 1)))
                        let pacing: BenchPacing = mode == "rate"
                            ? .rate(perSecond: rate, window: window)
                            : .unbounded(window: window, ackEvery: ackEvery)
                        let result = try await runCase(
                            number: caseNumber, mode: mode, subscribers: count, size: size, pacing: pacing,
                            shape: shape, parse: parse, target: target, loops: loops, service: service)
                        Bench.emit(result.line)
                                        results.append(result)
                    }
                }
            }
        }
        if large || largeOnly {
            caseNumber += 1
            // Against another broker the send message must fit its default 1 MiB limit.
            let size = service == nil ? (1 << 20) - 128 : 1 << 20
            let result = try await runLargeCase(
                number: caseNumber, size: size, shape: shape, parse: parse, target: target, loops: loops, service: service)
            Bench.emit(result.line)
                results.append(result)
        }

        for loop in loops { loop.eventLoop.shutdown() }
        if let service { await service.shutdown() }
        let loadAfter = Bench.loadAverage()
        let report: Value = .object([
            "bench": .string("hubcli"),
            "server": .string(url ?? "in-process"),
            "cores": .int(Int64(ProcessInfo.processInfo.activeProcessorCount)),
            "client_loops": .int(Int64(clientLoops)),
            "shape": .string(shape.rawValue), "parse": .string(parse.rawValue), "batch": .bool(batch),
            "load_average_before": .array(loadBefore.map { .double(($0 * 100).rounded() / 100) }),
            "load_average_after": .array(loadAfter.map { .double(($0 * 100).rounded() / 100) }),
            "cases": .array(results.map(\.json)),
        ])
        var bytes: [UInt8] = []
        report.writeJSON(into: &bytes)
        Bench.emit(String(decoding: bytes, as: UTF8.self))
        if results.contains(where: { !$0.failures.isEmpty }) { throw ExitCode(2) }
    }

    // MARK: Cases

    /// Connects the subscribers and the publisher of one case; returns the publisher.
    private func setUp(
        run: BenchRun, subject: String, size: Int, subscribers: Int, pacing: BenchPacing,
        shape: BenchShape, parse: BenchParse, target: BenchTarget, loops: [BenchLoop],
        onValue: (@Sendable (BenchPublisher) -> (Int64) -> Void)? = nil
    ) async throws -> LoopBound<BenchPublisher> {
        let batch = self.batch
        for loop in loops { try await loop.eventLoop.submit { loop.histogram.reset() } }
        let publisherLoop = loops[0]
        let box = try await publisherLoop.eventLoop.submit {
            let publisher = BenchPublisher(
                run: run, eventLoop: publisherLoop.eventLoop, subject: subject, size: size, shape: shape, pacing: pacing)
            publisher.connect(publisherLoop, to: target)
            return LoopBound(publisher, eventLoop: publisherLoop.eventLoop)
        }
        try await Bench.wait("the publisher to connect", run: run) { run.publisherOpen.load() == 1 }
        // With several loops the publisher has the first to itself.
        let subscriberLoops = loops.count > 1 ? Array(loops.dropFirst()) : loops
        for index in 0..<subscribers {
            let loop = subscriberLoops[index % subscriberLoops.count]
            try await loop.eventLoop.submit {
                let subscriber = BenchSubscriber(
                    index: index, run: run, loop: loop, subject: subject, batch: batch, parse: parse, shape: shape)
                if let onValue, loop === publisherLoop { subscriber.onValue = onValue(box.value) }
                _ = loop.connect(to: target, handler: subscriber)
            }
        }
        try await Bench.wait("\(subscribers) subscriptions", run: run) { run.subscribed.load() == subscribers }
        return box
    }

    /// Closes the case's connections and waits for them to close.
    private func tearDown(run: BenchRun, connections: Int, loops: [BenchLoop]) async {
        run.tearingDown.store(true, ordering: .relaxed)
        for loop in loops { _ = try? await loop.eventLoop.submit { loop.closeAll() } }
        try? await Bench.wait("the connections to close", run: run, timeout: 5) { run.closed.load() >= connections }
    }

    private func runCase(
        number: Int, mode: String, subscribers: Int, size: Int, pacing: BenchPacing, shape: BenchShape,
        parse: BenchParse, target: BenchTarget, loops: [BenchLoop], service: HubService?
    ) async throws -> BenchResult {
        let run = BenchRun(subscribers: subscribers)
        let box = try await setUp(
            run: run, subject: "bench.case\(number)", size: size, subscribers: subscribers, pacing: pacing,
            shape: shape, parse: parse, target: target, loops: loops)
        let publisherLoop = loops[0].eventLoop
        try await publisherLoop.submit { box.value.start() }
        try await Task.sleep(for: .seconds(warmup))

        let serverBefore = await service?.statistics
        let cpuBefore = try await Bench.cpuTimes(service: service, loops: loops)
        let publishedBefore = run.published.load()
        let deliveredBefore = run.totalDelivered
        let start = EventLoop.monotonicNanoseconds()
        run.measuring.store(true, ordering: .relaxed)
        try await Task.sleep(for: .seconds(duration))
        run.measuring.store(false, ordering: .relaxed)
        let end = EventLoop.monotonicNanoseconds()
        let publishedAfter = run.published.load()
        let deliveredAfter = run.totalDelivered
        let serverAfter = await service?.statistics
        let cpuAfter = try await Bench.cpuTimes(service: service, loops: loops)

        try await publisherLoop.submit { box.value.stop() }
        var histogram = BenchHistogram()
        for loop in loops { histogram.merge(try await loop.eventLoop.submit { loop.histogram }) }
        await tearDown(run: run, connections: subscribers + 1, loops: loops)
        return BenchResult(
            mode: mode, subscribers: subscribers, size: size, batch: batch,
            targetRate: mode == "rate" ? rate : nil, seconds: Double(end - start) / 1e9,
            published: publishedAfter - publishedBefore, delivered: deliveredAfter - deliveredBefore,
            latency: histogram, server: Bench.difference(serverBefore, serverAfter),
            serverCPU: cpuBefore.server.flatMap { before in cpuAfter.server.map { Double($0 - before) / 1e9 } },
            loadCPU: Double(cpuAfter.load - cpuBefore.load) / 1e9, failures: run.failures)
    }

    /// One publisher, one subscriber on the same loop, a value of `size` bytes sent
    /// again each time the previous one arrived; the latency of each.
    private func runLargeCase(
        number: Int, size: Int, shape: BenchShape, parse: BenchParse, target: BenchTarget, loops: [BenchLoop],
        service: HubService?
    ) async throws -> BenchResult {
        let run = BenchRun(subscribers: 1)
        let rounds = largeCount
        let warmupRounds = 3
        let loop = [loops[0]]
        let box = try await setUp(
            run: run, subject: "bench.case\(number)", size: size, subscribers: 1, pacing: .manual,
            shape: shape, parse: parse, target: target, loops: loop,
            onValue: { publisher in
                var seen = 0
                return { _ in
                    seen += 1
                    if seen == warmupRounds { run.measuring.store(true, ordering: .relaxed) }
                    if seen < warmupRounds + rounds { publisher.sendOne() }
                }
            })
        let serverBefore = await service?.statistics
        let cpuBefore = try await Bench.cpuTimes(service: service, loops: loop)
        let start = EventLoop.monotonicNanoseconds()
        try await loops[0].eventLoop.submit { box.value.sendOne() }
        try await Bench.wait("\(rounds) large values", run: run, timeout: 120) {
            run.totalDelivered >= warmupRounds + rounds
        }
        let end = EventLoop.monotonicNanoseconds()
        run.measuring.store(false, ordering: .relaxed)
        let serverAfter = await service?.statistics
        let cpuAfter = try await Bench.cpuTimes(service: service, loops: loop)
        let histogram = try await loops[0].eventLoop.submit { loops[0].histogram }
        await tearDown(run: run, connections: 2, loops: loop)
        return BenchResult(
            mode: "large", subscribers: 1, size: size, batch: batch, targetRate: nil,
            seconds: Double(end - start) / 1e9, published: run.published.load(), delivered: run.totalDelivered,
            latency: histogram, server: Bench.difference(serverBefore, serverAfter),
            serverCPU: cpuBefore.server.flatMap { before in cpuAfter.server.map { Double($0 - before) / 1e9 } },
            loadCPU: Double(cpuAfter.load - cpuBefore.load) / 1e9, failures: run.failures)
    }

    // MARK: Helpers

    /// CPU time (ns) used so far by the in-process broker's loop thread and, summed, by
    /// the load generator's loop threads.
    private static func cpuTimes(service: HubService?, loops: [BenchLoop]) async throws -> (server: Int64?, load: Int64) {
        var server: Int64?
        if let service { server = try await service.eventLoop.submit { threadCPUNanoseconds() } }
        var load: Int64 = 0
        for loop in loops { load += try await loop.eventLoop.submit { threadCPUNanoseconds() } }
        return (server, load)
    }

    /// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), in nanoseconds.
    private static func threadCPUNanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    private static func difference(
        _ before: HubService.Statistics?, _ after: HubService.Statistics?
    ) -> BenchResult.ServerFigures? {
        guard let before, let after else { return nil }
        return BenchResult.ServerFigures(
            writeCalls: after.writeCalls - before.writeCalls,
            messagesWritten: after.messagesWritten - before.messagesWritten,
            valuesEncoded: after.encodingCacheMisses - before.encodingCacheMisses,
            encodingCacheHits: after.encodingCacheHits - before.encodingCacheHits)
    }

    /// Polls `condition` every millisecond; fails after `timeout` seconds or on a failure of the run.
    private static func wait(
        _ what: String, run: BenchRun, timeout: Double = 20, _ condition: @Sendable () -> Bool
    ) async throws {
        let deadline = EventLoop.monotonicNanoseconds() + Int64(timeout * 1e9)
        while !condition() {
            if let failure = run.failures.first { throw CLIError("bench: waiting for \(what): \(failure)") }
            if EventLoop.monotonicNanoseconds() > deadline { throw CLIError("bench: timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    private static func integers(_ list: String, _ option: String) throws -> [Int] {
        let values = list.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !values.isEmpty, values.allSatisfy({ ($0 ?? 0) > 0 }) else {
            throw ValidationError("\(option) must be positive integers separated by commas, got '\(list)'")
        }
        return values.map { $0! }
    }

    /// `ws://127.0.0.1:PORT/path`; only loopback hosts.
    static func target(_ url: String) throws -> BenchTarget {
        guard let components = URLComponents(string: url), components.scheme == "ws",
            let host = components.host, let port = components.port
        else { throw ValidationError("--url must look like ws://127.0.0.1:7420/, got '\(url)'") }
        guard host == "127.0.0.1" || host == "localhost" else {
            throw ValidationError("--url: the benchmark only runs against this machine (127.0.0.1), got '\(host)'")
        }
        return BenchTarget(host: "127.0.0.1", port: port, path: components.path.isEmpty ? "/" : components.path)
    }

    /// Writes one line to standard output at once (no buffering between cases).
    private static func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    private static func loadAverage() -> [Double] {
        var loads = [Double](repeating: 0, count: 3)
        let count = getloadavg(&loads, 3)
        return count == 3 ? loads : []
    }
}
