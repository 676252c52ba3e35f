import NetworkTestSupport
import Foundation
import HubClient
import HubValue
import Testing

/// Drives the `hubcli` executable as a process: a broker on port 0 and the client commands.
@Suite("hubcli process")
struct HubCLIProcessTests {
    @Test func serveAndTheClientCommands() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let server = try RunningProcess(hubcli, ["serve", "--port", "0", "--log-level", "warning"])
        let port = try await server.port()
        let url = "ws://127.0.0.1:\(port)"
        let observer = try await HubClient.connect(to: url + "/", configuration: testConfiguration())

        // subscribe --count stops after three values and exits 0.
        let subscriber = try RunningProcess(hubcli, ["subscribe", "prices", "--count", "3", "--window", "2", "--url", url])
        try await waitForSubscribers(1, of: "prices", client: observer)
        let send = try await run(hubcli, ["send", "prices", "1", #"{"a":2}"#, #""x""#, "4", "--url", url])
        #expect(send.status == 0, "\(send.stderr)")
        let subscribed = try await subscriber.finish()
        #expect(subscribed.status == 0, "\(subscribed.stderr)")
        #expect(subscribed.stdout == "1\n{\"a\":2}\n\"x\"\n")
        #expect(subscribed.stderr.contains("stopped after 3 values"))
        try await waitForSubscribers(0, of: "prices", client: observer)

        // send reads JSON lines from standard input, skips blank lines, stops at a bad one.
        let lines = try await run(hubcli, ["send", "lines", "--url", url], stdin: "5\n\n6\n")
        #expect(lines.status == 0, "\(lines.stderr)")
        let bad = try await run(hubcli, ["send", "lines", "--url", url], stdin: "7\n{oops\n8\n")
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("line 2: invalid JSON at byte 1"))
        let badArgument = try await run(hubcli, ["send", "lines", "1", "[1,", "--url", url])
        #expect(badArgument.status == 1)
        #expect(badArgument.stderr.contains("argument 2: invalid JSON at byte 3"))

        // complete, fail and trigger; a server error exits 3 with its code.
        #expect(try await run(hubcli, ["trigger", "refresh", "--key", #"{"k":1}"#, "--url", url]).status == 0)
        let wrongKind = try await run(hubcli, ["trigger", "prices", "--url", url])
        #expect(wrongKind.status == 3)
        #expect(wrongKind.stderr.contains("not_found"))
        #expect(try await run(hubcli, ["complete", "lines", "--url", url]).status == 0)
        let afterComplete = try await run(hubcli, ["send", "lines", "9", "--url", url])
        #expect(afterComplete.status == 3)
        #expect(afterComplete.stderr.contains("completed"))
        #expect(try await run(hubcli, ["fail", "doomed", #"{"reason":"x"}"#, "--url", url]).status == 0)

        // list: a table, or the catalog as JSON; a trigger's subscribers and the
        // connections (the observer, the trigger's subscriber, list itself) are counted.
        let activations = try RunningProcess(hubcli, ["subscribe", "refresh", "--count", "1", "--url", url])
        try await waitForSubscribers(1, of: "refresh", client: observer)
        let table = try await run(hubcli, ["list", "--url", url])
        #expect(table.status == 0)
        let rows = table.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(rows.first == ["TYPE", "NAME", "KIND", "STATE", "SUBSCRIBERS"])
        #expect(rows.contains(["subject", "prices", "passthrough", "open", "0"]))
        #expect(rows.contains(["subject", "lines", "passthrough", "completed", "0"]))
        #expect(rows.contains(["subject", "doomed", "passthrough", "failed", "0"]))
        #expect(rows.contains(["trigger", "refresh", "-", "-", "1"]))
        // At least those three (a command that just exited may not have been counted out yet).
        #expect(rows.last?.first == "connections:")
        #expect(rows.last.flatMap { Int($0.last ?? "") } ?? 0 >= 3, "\(rows)")
        let json = try await run(hubcli, ["list", "--json", "--url", url])
        #expect(json.status == 0)
        let catalog = try Value.parse(json.stdout)
        #expect(catalog["triggers"] == [["name": "refresh", "subscribers": 1]])
        #expect(catalog["connections"]?.intValue ?? 0 >= 3)
        #expect(try await run(hubcli, ["trigger", "refresh", "--url", url]).status == 0)
        #expect(try await activations.finish().status == 0)

        // delete: a completed subject takes values again; a trigger is not a subject.
        #expect(try await run(hubcli, ["delete", "lines", "--url", url]).status == 0)
        #expect(try await run(hubcli, ["send", "lines", "10", "--url", url]).status == 0)
        let deleteTrigger = try await run(hubcli, ["delete", "refresh", "--url", url])
        #expect(deleteTrigger.status == 3)
        #expect(deleteTrigger.stderr.contains("not_found"))
        let afterDelete = try Value.parse(try await run(hubcli, ["list", "--json", "--url", url]).stdout)
        #expect(afterDelete["subjects"]?.arrayValue?.first { $0["name"] == "lines" }?["state"] == "open")
        #expect(catalog["subjects"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["doomed", "lines", "prices"])

        // A bad URL names it.
        let badURL = try await run(hubcli, ["list", "--url", "http://127.0.0.1:\(port)"])
        #expect(badURL.status == 1)
        #expect(badURL.stderr.contains("invalid URL 'http://127.0.0.1:\(port)'"))

        // SIGTERM stops the broker promptly with status 0.
        await observer.close()
        let clock = ContinuousClock()
        let start = clock.now
        server.process.terminate()
        let served = try await server.finish(timeout: .seconds(10))
        #expect(served.status == 0, "\(served.stderr)")
        #expect(clock.now - start < .seconds(5))

        // Nothing listens there any more: a refused connection says so.
        let refused = try await run(hubcli, ["list", "--url", url])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("cannot connect to \(url)/: connection refused"))
    }
}

extension HubCLIProcessTests {
    /// A signal the broker answers, sent the moment it says it listens, is answered: SIGTERM
    /// and SIGINT stop it cleanly (status 0, not the signal's default death), SIGHUP and
    /// SIGUSR2 do not end it. (They were trapped only once the service group ran, a moment
    /// after "listening": a SIGTERM then ended the process in 30 runs of 30.)
    @Test(arguments: [SIGTERM, SIGINT])
    func aStopSignalRightAfterListeningStopsTheBrokerCleanly(signal: Int32) async throws {
        let hubcli = try HubCLIExecutable.locate()
        for _ in 0..<3 {
            let server = try RunningProcess(hubcli, ["serve", "--port", "0", "--log-level", "warning"])
            _ = try await server.port()
            kill(server.process.processIdentifier, signal)
            let served = try await server.finish(timeout: .seconds(10))
            #expect(!server.process.endedBySignal, "ended by signal \(served.status): \(served.stderr)")
            #expect(served.status == 0, "\(served.stderr)")
        }
    }

    @Test(arguments: [SIGHUP, SIGUSR2])
    func anotherSignalRightAfterListeningDoesNotEndTheBroker(signal: Int32) async throws {
        let hubcli = try HubCLIExecutable.locate()
        let server = try RunningProcess(hubcli, ["serve", "--port", "0", "--log-level", "warning"])
        let port = try await server.port()
        kill(server.process.processIdentifier, signal)
        if signal == SIGHUP {
            // No --config to reload: the broker says so and serves on.
            let client = try await HubClient.connect(to: "ws://127.0.0.1:\(port)/", configuration: testConfiguration())
            try await client.send(1, to: "still.serving")
            await client.close()
            server.process.terminate()
        }
        // SIGUSR2 drains: the broker ends by itself, cleanly.
        let served = try await server.finish(timeout: .seconds(20))
        #expect(!server.process.endedBySignal, "ended by signal \(served.status): \(served.stderr)")
        #expect(served.status == 0, "\(served.stderr)")
    }
}

/// The finished process's status and output.
struct ProcessResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// A child process whose output is collected as it arrives.
///
/// Each pipe is read by a thread of its own with blocking reads until its end (not with
/// FileHandle's readabilityHandler, whose dispatch source could still watch a descriptor
/// that had been closed and reused: the test process then crashed in libdispatch).
final class RunningProcess: @unchecked Sendable {
    let process = ChildProcess()
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    private let stderrChunks = EventQueue<String>()
    private let exited = EventQueue<Int32>()
    private let pipesEnded = EventQueue<Bool>()

    /// Starts `executable`; `environment` adds to (or, with a nil value, removes from) this process's.
    init(_ executable: URL, _ arguments: [String], stdin: String? = nil, environment: [String: String?] = [:]) throws {
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            var merged = ProcessInfo.processInfo.environment
            for (name, value) in environment { merged[name] = value }
            process.environment = merged
        }
        let outPipe = Pipe()
        let errPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        if let stdin {
            let inPipe = Pipe()
            process.standardInput = inPipe
            inPipe.fileHandleForWriting.write(Data(stdin.utf8))
            try inPipe.fileHandleForWriting.close()
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        process.terminationHandler = { [self] process in
            ChildProcesses.forget(process.processIdentifier)
            exited.push(process.terminationStatus)
        }
        try process.run()
        // A broker a test left running (a failed expectation before its terminate) ends with the run.
        ChildProcesses.killAtExit(process.processIdentifier)
        let outHandle = outPipe.fileHandleForReading
        let errHandle = errPipe.fileHandleForReading
        Thread.detachNewThread { [self] in
            while case let data = outHandle.availableData, !data.isEmpty {
                lock.withLock { out.append(data) }
            }
            pipesEnded.push(true)
        }
        Thread.detachNewThread { [self] in
            while case let data = errHandle.availableData, !data.isEmpty {
                lock.withLock { err.append(data) }
                stderrChunks.push(String(decoding: data, as: UTF8.self))
            }
            // An empty chunk: the end (the waits below stop at once instead of timing out).
            stderrChunks.push("")
            pipesEnded.push(true)
        }
    }

    /// The port of `hubcli: listening on ws://127.0.0.1:PORT/` (or `scheme://`) on standard error.
    func port(scheme: String = "ws", timeout: Duration = .seconds(60)) async throws -> Int {
        var seen = ""
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            if let range = seen.range(of: "hubcli: listening on \(scheme)://127.0.0.1:") {
                let digits = seen[range.upperBound...].prefix { $0.isNumber }
                if seen[range.upperBound...].dropFirst(digits.count).hasPrefix("/"), let port = Int(digits) {
                    return port
                }
            }
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { throw TimedOut(what: "the broker's listening line, got: \(seen)") }
            seen += try await nextStderrChunk(timeout: left, "the broker's output", after: seen)
        }
    }

    /// The next chunk of standard error, within `timeout`; throws ``StandardErrorEnded``
    /// (with `seen`) once the pipe has ended.
    private func nextStderrChunk(timeout: Duration, _ what: String, after seen: String) async throws -> String {
        let chunk = try await stderrChunks.next(timeout: timeout, what)
        guard !chunk.isEmpty else { throw StandardErrorEnded(seen: seen) }
        return chunk
    }

    /// What it has printed so far on standard output and standard error.
    func printed() -> (stdout: String, stderr: String) {
        lock.withLock { (String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self)) }
    }

    /// Waits until standard error contains `text`; returns all of it so far.
    @discardableResult
    func waitForStderr(containing text: String, timeout: Duration = .seconds(20)) async throws -> String {
        var seen = lock.withLock { String(decoding: err, as: UTF8.self) }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while !seen.contains(text) {
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { throw TimedOut(what: "'\(text)' on standard error, got: \(seen)") }
            seen += try await nextStderrChunk(timeout: left, "standard error", after: seen)
        }
        return seen
    }

    /// Waits for the exit (killing the process after `timeout`) and returns its output.
    func finish(timeout: Duration = .seconds(20)) async throws -> ProcessResult {
        let status: Int32
        do {
            status = try await exited.next(timeout: timeout, "the process to exit")
        } catch {
            process.interrupt()
            kill(process.processIdentifier, SIGKILL)
            let (stdout, stderr) = printed()
            throw NotFinished(timeout: timeout, stdout: stdout, stderr: stderr)
        }
        // Both readers reach the end of their pipe (a grandchild holding a pipe open would
        // keep it: bounded by the timeout).
        _ = try? await pipesEnded.next(2, timeout: timeout, "the ends of the output pipes")
        return lock.withLock {
            ProcessResult(
                status: status, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
        }
    }
}

/// A process did not exit within its time: what it printed until then says where it was.
struct NotFinished: Error, CustomStringConvertible {
    let timeout: Duration
    let stdout: String
    let stderr: String
    var description: String {
        "the process did not exit within \(timeout); standard output:\n\(stdout.suffix(4000))\nstandard error:\n\(stderr.suffix(4000))"
    }
}

/// A process's standard error ended (it exited) before what a test waited for.
struct StandardErrorEnded: Error, CustomStringConvertible {
    /// Everything it wrote there.
    let seen: String
    var description: String { "standard error ended before the expected output; it held: \(seen)" }
}

/// Runs `hubcli` with `arguments` to completion.
func run(
    _ executable: URL, _ arguments: [String], stdin: String? = nil, environment: [String: String?] = [:],
    timeout: Duration = .seconds(20)
) async throws -> ProcessResult {
    try await RunningProcess(executable, arguments, stdin: stdin, environment: environment).finish(timeout: timeout)
}
