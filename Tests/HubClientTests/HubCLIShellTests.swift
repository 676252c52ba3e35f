import Foundation
import HubClient
import HubValue
import NetworkTestSupport
import Testing

/// `hubcli` as a shell tool, driven as a real process against real brokers:
/// a closed standard output, usage errors (64) with suggestions, the JSON
/// quoting hint, HUB_URL/HUB_TOKEN and --token-file, a taken port, the
/// subscription's buffer options, --reconnect across broker restarts, and the
/// example scripts.
@Suite("hubcli in the shell")
struct HubCLIShellTests {
    static let bash = URL(fileURLWithPath: "/bin/bash")
    /// No broker or token of the developer's environment leaks into a test.
    static let clean: [String: String?] = ["HUB_URL": nil, "HUB_TOKEN": nil, "HUBCLI": nil]

    /// A broker on 127.0.0.1 (`port` 0: a free one) and its port.
    ///
    /// A given port was freed by an earlier broker, and another test's socket may hold it
    /// for a moment (the kernel hands out ephemeral ports from the same range): a broker
    /// that cannot listen there is started again, every 100 ms for up to 10 s.
    static func broker(_ hubcli: URL, port: Int = 0, config: String? = nil) async throws -> (RunningProcess, Int) {
        var arguments = ["serve", "--port", String(port), "--log-level", "warning"]
        if let config { arguments += ["--config", config] }
        var attempt = 1
        while true {
            let server = try RunningProcess(hubcli, arguments, environment: clean)
            do {
                return (server, try await server.port())
            } catch let ended as StandardErrorEnded
                where port != 0 && attempt < 100 && ended.seen.contains("address already in use")
            {
                _ = try await server.finish()
                try await Task.sleep(for: .milliseconds(100))
                attempt += 1
            }
        }
    }

    /// Writes an executable script through a descriptor closed on exec, so that no child
    /// another test starts meanwhile keeps it open for writing (the kernel then refuses to
    /// run it: "Text file busy").
    static func writeExecutable(_ text: String, to url: URL) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count, fchmod(fd, 0o755) == 0 else {
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
    }

    /// Runs `script` with bash; again, up to five times, when running a script just written
    /// failed with "Text file busy" (a child forked by another thread between our open and
    /// its exec held the file for writing for that moment).
    static func runScript(_ script: URL, environment: [String: String?]) async throws -> ProcessResult {
        // An example starts a broker and a dozen hubcli processes: a second alone, far
        // more beside a full parallel run on two cores.
        var result = try await run(bash, [script.path], environment: environment, timeout: .seconds(90))
        for _ in 1..<5 where result.stderr.contains("Text file busy") {
            try await Task.sleep(for: .milliseconds(200))
            result = try await run(bash, [script.path], environment: environment, timeout: .seconds(90))
        }
        return result
    }

    /// A folder of its own for a test's files.
    static func scratch() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hubcli-shell-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test func aClosedStandardOutputEndsTheCommandQuietlyWithStatus0() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let (server, port) = try await Self.broker(hubcli)
        defer { server.process.terminate() }
        let url = "ws://127.0.0.1:\(port)"

        // `| head -3`: the fourth value meets a closed pipe.
        let headed = try await run(
            Self.bash, ["-c", #"set -o pipefail; "$0" subscribe --url "$1" --pipeline 'timer(100ms)' | head -3"#, hubcli.path, url],
            environment: Self.clean)
        #expect(headed.status == 0, "\(headed.stderr)")
        // Three ticks in order (a tick that comes late on a loaded machine skips a number).
        let ticks = headed.stdout.split(separator: "\n").compactMap { Int($0) }
        #expect(ticks.count == 3 && ticks == ticks.sorted() && Set(ticks).count == 3, "\(headed.stdout)")
        #expect(headed.stderr.isEmpty)

        // Standard output closed from the start.
        for command in [#""$0" list --url "$1" >&-"#, #""$0" subscribe --url "$1" --pipeline 'sequence([1, 2])' >&-"#] {
            let closed = try await run(Self.bash, ["-c", command, hubcli.path, url], environment: Self.clean)
            #expect(closed.status == 0, "\(command): \(closed.stderr)")
            #expect(closed.stderr.isEmpty, "\(command): \(closed.stderr)")
        }
    }

    @Test func usageErrorsExit64AndNameWhatWasMeant() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let cases: [(arguments: [String], says: String)] = [
            (["subscibe", "prices"], "unknown command 'subscibe'; did you mean 'subscribe'?"),
            (["lsit"], "unknown command 'lsit'; did you mean 'list'?"),
            (["publish", "x"], "unknown command 'publish'"),
            (["subscribe", "--windw", "4", "prices"], "Did you mean '--window'?"),
            (["subscribe", "prices", "--window", "0"], "--window must be at least 1, got 0"),
            (["subscribe", "prices", "--overflow", "sometimes"], "sometimes"),
            (["subscribe", "prices", "--buffer", "0"], "--buffer must be at least 1, got 0"),
            (["send"], "Missing expected argument '<name>'"),
            (["list", "--token", "a", "--token-file", "/etc/hostname"], "give --token or --token-file, not both"),
            (["list", "--token-file", "/nonexistent/token"], "--token-file '/nonexistent/token': no such file"),
        ]
        for (arguments, says) in cases {
            let result = try await run(hubcli, arguments, environment: Self.clean)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(says), "\(arguments): \(result.stderr)")
        }
        let version = try await run(hubcli, ["--version"])
        #expect(version.status == 0)
        // The release from VERSION, and the commit: `unknown` unless scripts/package
        // stamped the build (scripts/package-test checks the packaged one's).
        let release = try String(
            contentsOf: HubCLIExecutable.packageRoot.appendingPathComponent("VERSION"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!release.isEmpty)
        let line = version.stdout.wholeMatch(of: /hubcli (.+) \(commit (unknown|[0-9a-f]{7,40}(-dirty)?), protocol v1\)\n/)
        #expect(line?.output.1 == Substring(release), "\(version.stdout)")
        let help = try await run(hubcli, ["--help"])
        #expect(help.stdout.contains("64 for a usage error") && help.stdout.contains("$HUB_URL"))
        let subscribeHelp = try await run(hubcli, ["subscribe", "--help"])
        #expect(subscribeHelp.stdout.contains("--reconnect") && subscribeHelp.stdout.contains("64 for a usage error"))
    }

    @Test func hintsForStringsAndOperatorsAndATakenPort() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let (server, port) = try await Self.broker(hubcli)
        defer { server.process.terminate() }
        let url = "ws://127.0.0.1:\(port)"

        let unquoted = try await run(hubcli, ["send", "chat", "hello", "--url", url], environment: Self.clean)
        #expect(unquoted.status == 1)
        #expect(unquoted.stderr.contains(#"argument 1: invalid JSON at byte 0"#))
        #expect(unquoted.stderr.contains(#"a string needs JSON quotes: '"hello"'"#), "\(unquoted.stderr)")
        let fromStdin = try await run(hubcli, ["send", "chat", "--url", url], stdin: "feed down\n", environment: Self.clean)
        #expect(fromStdin.status == 1)
        #expect(fromStdin.stderr.contains(#"a string needs JSON quotes: "feed down""#), "\(fromStdin.stderr)")
        let broken = try await run(hubcli, ["send", "chat", #"{"a": 1"#, "--url", url], environment: Self.clean)
        #expect(broken.status == 1)
        #expect(!broken.stderr.contains("JSON quotes"), "broken JSON gets no quoting hint: \(broken.stderr)")
        let quoted = try await run(hubcli, ["send", "chat", #""hello""#, "--url", url], environment: Self.clean)
        #expect(quoted.status == 0, "\(quoted.stderr)")

        let typo = try await run(
            hubcli, ["subscribe", "--pipeline", "sequence([1]) | mapp(.)", "--url", url], environment: Self.clean)
        #expect(typo.status == 3)
        #expect(typo.stderr.contains("pipeline_error: 1:17: unknown operator 'mapp' (did you mean 'map'?)"), "\(typo.stderr)")

        let taken = try await run(hubcli, ["serve", "--port", String(port)], environment: Self.clean)
        #expect(taken.status == 1)
        #expect(taken.stderr.contains("cannot listen on 127.0.0.1:\(port): address already in use"), "\(taken.stderr)")
    }

    @Test func theURLAndTokenComeFromTheEnvironmentOrATokenFile() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let folder = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = folder.appendingPathComponent("hub.yml")
        try Data("auth:\n  tokens: [env-secret]\n".utf8).write(to: config)
        let tokenFile = folder.appendingPathComponent("token")
        try Data("env-secret\n".utf8).write(to: tokenFile)
        let (server, port) = try await Self.broker(hubcli, config: config.path)
        defer { server.process.terminate() }
        let url = "ws://127.0.0.1:\(port)"

        let fromEnvironment = try await run(hubcli, ["list"], environment: ["HUB_URL": url, "HUB_TOKEN": "env-secret"])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        let withoutToken = try await run(hubcli, ["list"], environment: ["HUB_URL": url, "HUB_TOKEN": nil])
        #expect(withoutToken.status == 3)
        #expect(withoutToken.stderr.contains("unauthorized"), "\(withoutToken.stderr)")
        let fromFile = try await run(
            hubcli, ["send", "s", "1", "--token-file", tokenFile.path], environment: ["HUB_URL": url, "HUB_TOKEN": nil])
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        let wrongInEnvironment = try await run(
            hubcli, ["list", "--token-file", tokenFile.path], environment: ["HUB_URL": url, "HUB_TOKEN": "wrong"])
        #expect(wrongInEnvironment.status == 0, "--token-file wins over HUB_TOKEN: \(wrongInEnvironment.stderr)")
        let urlFlagWins = try await run(
            hubcli, ["list", "--url", url], environment: ["HUB_URL": "ws://127.0.0.1:1", "HUB_TOKEN": "env-secret"])
        #expect(urlFlagWins.status == 0, "\(urlFlagWins.stderr)")
    }

    @Test func subscribeTakesTheBufferOptions() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let (server, port) = try await Self.broker(hubcli)
        defer { server.process.terminate() }
        let url = "ws://127.0.0.1:\(port)"
        let observer = try await HubClient.connect(to: url + "/", configuration: testConfiguration())

        // No demand and a buffer of one: the second value overflows it.
        let subscriber = try RunningProcess(
            hubcli, ["subscribe", "held", "--demand", "0", "--buffer", "1", "--overflow", "error", "--url", url],
            environment: Self.clean)
        try await waitForSubscribers(1, of: "held", client: observer)
        try await observer.send(1, to: "held")
        try await observer.send(2, to: "held")
        let overflowed = try await subscriber.finish()
        #expect(overflowed.status == 3)
        #expect(overflowed.stderr.contains("overflow"), "\(overflowed.stderr)")
        #expect(overflowed.stdout.isEmpty)
        await observer.close()

        let tooBig = try await run(hubcli, ["subscribe", "held", "--buffer", "1000000", "--url", url], environment: Self.clean)
        #expect(tooBig.status == 3)
        #expect(tooBig.stderr.contains("bad_message") && tooBig.stderr.contains("buffer"), "\(tooBig.stderr)")

        // The batch form is the default; --batch still parses, --no-batch asks for the plain form.
        for form in [[], ["--batch"], ["--no-batch"]] {
            let printed = try await run(
                hubcli, ["subscribe", "--pipeline", "sequence([1, 2, 3])"] + form + ["--demand", "unlimited", "--url", url],
                environment: Self.clean)
            #expect(printed.status == 0, "\(form): \(printed.stderr)")
            #expect(printed.stdout == "1\n2\n3\n", "\(form)")
        }
    }

    @Test func reconnectWaitsForTheHubAndSubscribesAgainAfterARestart() async throws {
        let hubcli = try HubCLIExecutable.locate()
        // A port nothing listens on yet: the first broker has it, then gives it back.
        let (first, port) = try await Self.broker(hubcli)
        first.process.terminate()
        _ = try await first.finish()
        let url = "ws://127.0.0.1:\(port)"

        let subscriber = try RunningProcess(
            hubcli, ["subscribe", "prices", "--reconnect", "--count", "2", "--url", url], environment: Self.clean)
        try await subscriber.waitForStderr(containing: "retrying until the hub is up")

        var (server, _) = try await Self.broker(hubcli, port: port)
        var observer = try await HubClient.connect(to: url + "/", configuration: testConfiguration())
        try await waitForSubscribers(1, of: "prices", client: observer)
        try await observer.send(1, to: "prices")
        await observer.close()

        server.process.terminate()  // a clean stop: the subscription ends with shutting_down
        _ = try await server.finish()
        try await subscriber.waitForStderr(containing: "again once reconnected")

        (server, _) = try await Self.broker(hubcli, port: port)
        defer { server.process.terminate() }
        observer = try await HubClient.connect(to: url + "/", configuration: testConfiguration())
        try await waitForSubscribers(1, of: "prices", client: observer)
        try await observer.send(2, to: "prices")
        await observer.close()

        let result = try await subscriber.finish()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "1\n2\n")
        #expect(result.stderr.contains("shutting_down"))
        #expect(result.stderr.contains("values published meanwhile are missed"))
        #expect(result.stderr.contains("stopped after 2 values (--count)"))
    }

    @Test func theExampleScriptsUseTheHubCLIOnThePathAndShowWhatFailed() async throws {
        let hubcli = try HubCLIExecutable.locate()
        let folder = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("calls.log")
        let wrapper = folder.appendingPathComponent("hubcli")
        try Self.writeExecutable("#!/bin/sh\necho \"$1\" >> '\(log.path)'\nexec '\(hubcli.path)' \"$@\"\n", to: wrapper)
        let path = folder.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let script = HubCLIExecutable.packageRoot.appendingPathComponent("examples/todo/run.sh")

        let ran = try await Self.runScript(script, environment: Self.clean.merging(["PATH": path]) { $1 })
        #expect(ran.status == 0, "\(ran.stderr)")
        #expect(ran.stdout.contains(#"late         {"state":"content","todos":[{"id":"2","title":"Walk the dog"},{"id":"3","title":"Call mum"}]}"#), "\(ran.stdout)")
        #expect(ran.stdout.contains("refused      hubcli: invalid_value: subject 'input' refuses the value: .: expected object, got integer"),
                "\(ran.stdout)")
        let calls = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        #expect(calls.contains("serve") && calls.contains("send"), "the hubcli on PATH ran: \(calls)")

        // A step that fails (a send to a name the broker does not have) shows the
        // hub's error and the broker's log instead of deleting them.
        let sabotage = folder.appendingPathComponent("sabotage")
        try FileManager.default.createDirectory(at: sabotage, withIntermediateDirectories: true)
        try Self.writeExecutable("""
            #!/bin/sh
            if [ "$1" = send ]; then shift; name=$1; shift; exec '\(hubcli.path)' send "${name}_typo" "$@"; fi
            exec '\(hubcli.path)' "$@"

            """, to: sabotage.appendingPathComponent("hubcli"))
        let failed = try await Self.runScript(
            script, environment: Self.clean.merging(["PATH": sabotage.path + ":" + path]) { $1 })
        #expect(failed.status != 0)
        #expect(failed.stderr.contains("not_found: no subject named 'input_typo'"), "\(failed.stderr)")
        #expect(failed.stderr.contains("run.sh: hubcli send input"), "\(failed.stderr)")
        #expect(failed.stderr.contains("the broker's log"), "\(failed.stderr)")
    }
}
