import Foundation
import HubPipeline
import HubValue
@testable import HubServer
import HubSQLite
import Testing

@Suite("Broker configuration: parsing")
struct ConfigurationParsingTests {
    static let full = """
        listen:
          host: 0.0.0.0
          port: 9000
        autoCreate: false
        limits:
          maxMessageBytes: 2048
          maxConnections: 12
          maxSubscriptionsPerConnection: 34
          maxQueuedBytesPerConnection: 5678
          defaultBuffer: 20
          maxBuffer: 300
          pipelines:
            maxSourceLength: 400
            maxStages: 9
            maxExpressionDepth: 7
            minimumInterval: "250ms"
            maxValueDepth: 100
            maxValueBytes: 65536
            maxCallDepth: 12
          perConnection:
            stepsPerSecond: 1000
            burstSteps: 5000
            memoryBytes: 4096
            timers: 3
        auth:
          tokens: [alpha, beta]
          timeout: 3s
        allowAdHocPipelines: [beta]
        subjects:
          orders:
          prices: {kind: currentValue, initial: {b: 2, a: [1, 2.5, "x", null, true]}, buffer: 50, overflow: latest}
          quiet: {kind: currentValue}
          logs: {kind: passthrough, buffer: 7, overflow: dropOldest}
        triggers: [refresh, rebalance]
        pipelines:
          big:
            source: orders | filter(.qty > 100)
            buffer: 25
            overflow: dropNewest
          each:
            source: "orders | map(.qty)"
            shared: false
          short: big | map(.qty)
        """

    @Test func everySection() throws {
        let configuration = try parseBroker(yaml: Self.full, file: "full.yml")
        let service = configuration.service
        #expect(configuration.file == "full.yml")
        #expect(service.host == "0.0.0.0")
        #expect(service.port == 9000)
        #expect(service.hub.autoCreate == false)
        #expect(service.maxMessageSize == 2048)
        #expect(service.maxConnections == 12)
        #expect(service.session.maxSubscriptions == 34)
        #expect(service.session.maxQueuedBytes == 5678)
        #expect(service.hub.defaultBufferSize == 20)
        #expect(service.hub.maxBufferSize == 300)
        #expect(service.hub.limits == PipelineLimits(
            maxSourceLength: 400, maxStages: 9, maxExpressionDepth: 7, minimumInterval: .milliseconds(250),
            maxValueDepth: 100, maxValueBytes: 65536, maxCallDepth: 12))
        #expect(service.session.connectionBudget == ResourceBudget.Limits(
            stepsPerSecond: 1000, burst: 5000, maxBytes: 4096, maxTimers: 3))
        #expect(service.session.tokens == ["alpha", "beta"])
        #expect(service.session.authenticationTimeout == .seconds(3))
        #expect(configuration.adHocPipelines == .tokens(["beta"]))
        #expect(service.session.allowsPipelines)
        #expect(service.session.pipelineTokens == ["beta"])

        #expect(configuration.subjects.map(\.name) == ["orders", "prices", "quiet", "logs"])
        let orders = configuration.subjects[0]
        #expect(orders.kind == .passthrough)
        #expect(orders.initial == Value?.none)
        #expect(orders.buffer == nil)
        #expect(orders.overflow == nil)
        #expect(orders.location == BrokerConfiguration.SourceSegment(line: 30, column: 3))
        let prices = configuration.subjects[1]
        #expect(prices.kind == .currentValue)
        #expect(prices.initial == ["b": 2, "a": [1, 2.5, "x", nil, true]])
        #expect(prices.initial?.objectValue?.keys.elementsEqual(["b", "a"]) == true)
        #expect(prices.buffer == 50 && prices.overflow == .latest)
        #expect(configuration.subjects[2].kind == .currentValue && configuration.subjects[2].initial == .null)
        #expect(configuration.subjects[3].kind == .passthrough && configuration.subjects[3].buffer == 7)
        #expect(configuration.subjects[3].overflow == .dropOldest)

        #expect(configuration.triggers.map(\.name) == ["refresh", "rebalance"])
        #expect(configuration.triggers[1].location == BrokerConfiguration.SourceSegment(line: 34, column: 21))

        #expect(configuration.pipelines.map(\.name) == ["big", "each", "short"])
        let big = configuration.pipelines[0]
        #expect(big.source == "orders | filter(.qty > 100)" && big.shared && big.buffer == 25 && big.overflow == .dropNewest)
        #expect(big.sourcePath == "pipelines.big.source")
        #expect(configuration.pipelines[1].shared == false)
        #expect(configuration.pipelines[1].source == "orders | map(.qty)")
        let short = configuration.pipelines[2]
        #expect(short.source == "big | map(.qty)" && short.shared && short.sourcePath == "pipelines.short")
    }

    @Test func defaultsWithoutAFile() throws {
        for yaml in ["", "# nothing but a comment\n", "---\n", "subjects:\ntriggers:\npipelines:\nlimits:\n"] {
            let configuration = try parseBroker(yaml: yaml)
            let defaults = HubService.Configuration()
            #expect(configuration.service.host == defaults.host)
            #expect(configuration.service.port == defaults.port)
            #expect(configuration.service.hub.autoCreate)
            #expect(configuration.service.hub.defaultBufferSize == 1000)
            #expect(configuration.service.session.tokens == nil)
            #expect(configuration.adHocPipelines == .allowed)
            #expect(configuration.subjects.isEmpty && configuration.triggers.isEmpty && configuration.pipelines.isEmpty)
        }
    }

    @Test func eventLoopsDefaultToTheCoresThisProcessMayUse() throws {
        let cores = HubService.Configuration.availableCores
        #expect(cores >= 1)
        #expect(try parseBroker(yaml: "").service.eventLoops == cores)
        #expect(try parseBroker(yaml: "listen: {eventLoops: auto}").service.eventLoops == cores)
        #expect(try parseBroker(yaml: "listen: {eventLoops: 3}").service.eventLoops == 3)
        // The library's own default is the hub's loop alone.
        #expect(HubService.Configuration().eventLoops == 1)
    }

    /// How long a heavy fan-out's writes may wait: 3 ms unless configured; every event
    /// loop of the service gets it.
    @Test func theMaximumWriteDelayReachesEveryEventLoop() async throws {
        #expect(try parseBroker(yaml: "").service.maximumWriteDelay == .milliseconds(3))
        var service = try parseBroker(yaml: "listen: {maxWriteDelay: 10ms, eventLoops: 2}").service
        #expect(service.maximumWriteDelay == .milliseconds(10))
        service.port = 0
        let hub = try HubService(configuration: service)
        #expect(hub.eventLoop.configuration.writeCoalescingStreamingDelay == .milliseconds(10))
        #expect(hub.connectionLoops.map(\.configuration.writeCoalescingStreamingDelay) == [.milliseconds(10)])
        await hub.shutdown()
    }

    /// Writes stop waiting for coalescing at a quarter of the slow-consumer bound, 64 KiB
    /// at most: a hold never brings a client that reads near its bound.
    @Test func writesStopWaitingWellBelowTheSlowConsumerBound() {
        var configuration = HubService.Configuration()
        #expect(ServiceCore.connectionLimits(configuration).promptWriteSize == 64 << 10)
        configuration.session.maxQueuedBytes = 16 << 10
        configuration.maxMessageSize = 1000
        let limits = ServiceCore.connectionLimits(configuration)
        #expect(limits.promptWriteSize == 4 << 10)
        #expect(limits.maximumMessageSize == 1000)
        configuration.session.maxQueuedBytes = 1
        #expect(ServiceCore.connectionLimits(configuration).promptWriteSize == 1)
    }

    /// `taskset -c 0 hubcli serve` runs one loop: the count is the CPU affinity's mask,
    /// not the machine's cores (the pinned benchmark ran two loops on one core until it was).
    @Test func availableCoresCountsTheCPUAffinityMask() throws {
        #expect(HubService.Configuration.allowedCores(inStatus: "Name:\thubcli\nCpus_allowed:\t1\nCpus_allowed_list:\t0\n") == 1)
        #expect(HubService.Configuration.allowedCores(inStatus: "Cpus_allowed:\tff\n") == 8)
        #expect(HubService.Configuration.allowedCores(inStatus: "Cpus_allowed:\t00000000,00000003\n") == 2)
        #expect(HubService.Configuration.allowedCores(inStatus: "Name:\tx\n") == nil)
        #expect(HubService.Configuration.allowedCores(inStatus: "Cpus_allowed:\tzz\n") == nil)
        // This thread's own mask, whatever the machine.
        let status = try String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)
        #expect(HubService.Configuration.availableCores == HubService.Configuration.allowedCores(inStatus: status))
    }

    @Test func pendingHandshakes() throws {
        #expect(try parseBroker(yaml: "limits: {maxPendingHandshakes: 56}").service.maxPendingHandshakes == 56)
        #expect(try parseBroker(yaml: "autoCreate: true").service.maxPendingHandshakes == 1000)
        #expect(throws: (any Error).self) { try parseBroker(yaml: "limits: {maxPendingHandshakes: 0}") }
    }

    @Test func adHocPipelinesOnOff() throws {
        let off = try parseBroker(yaml: "allowAdHocPipelines: false")
        #expect(off.adHocPipelines == .forbidden && off.service.session.allowsPipelines == false)
        let on = try parseBroker(yaml: "allowAdHocPipelines: true")
        #expect(on.adHocPipelines == .allowed && on.service.session.allowsPipelines)
        #expect(on.service.session.pipelineTokens == nil)
    }

    @Test func aSmallerMaxBufferLowersTheDefaultBuffer() throws {
        let configuration = try parseBroker(yaml: "limits: {maxBuffer: 10}")
        #expect(configuration.service.hub.maxBufferSize == 10)
        #expect(configuration.service.hub.defaultBufferSize == 10)
    }

    /// YAML scalars map to values by the YAML 1.2 core schema.
    @Test(arguments: [
        ("42", Value.int(42)),
        ("-7", .int(-7)),
        ("+3", .int(3)),
        ("0x1F", .int(31)),
        ("0o17", .int(15)),
        ("9223372036854775807", .int(.max)),
        ("-9223372036854775808", .int(.min)),
        ("1.5", .double(1.5)),
        ("-2.5e3", .double(-2500)),
        (".5", .double(0.5)),
        ("true", .bool(true)),
        ("False", .bool(false)),
        ("null", .null),
        ("~", .null),
        ("", .null),
        ("yes", .string("yes")),
        ("off", .string("off")),
        ("\"42\"", .string("42")),
        ("'true'", .string("true")),
        ("!!str 12", .string("12")),
        ("hello world", .string("hello world")),
        ("1.2.3", .string("1.2.3")),
        ("[1, [2], {a: b}]", .array([1, [2], ["a": "b"]])),
        ("{z: 1, a: 2, m: 3}", .object(["z": 1, "a": 2, "m": 3])),
        ("|\n      line one\n      line two\n", .string("line one\nline two\n")),
    ])
    func scalarsMapToValues(yaml: String, expected: Value) throws {
        let configuration = try parseBroker(yaml: "subjects:\n  s:\n    initial: \(yaml)")
        let initial = try #require(configuration.subjects.first?.initial)
        #expect(initial == expected)
        // Exact kinds: an integer stays an integer, a float a float.
        switch (initial, expected) {
        case (.int, .int), (.double, .double), (.string, .string), (.bool, .bool), (.null, .null), (.array, .array):
            break
        case (.object(let a), .object(let b)):
            #expect(Array(a.keys) == Array(b.keys))
        default:
            Issue.record("\(initial) is not of the kind of \(expected)")
        }
    }

    @Test func durations() throws {
        let cases: [(String, Duration)] = [
            ("10ms", .milliseconds(10)), ("5s", .seconds(5)), ("1.5s", .milliseconds(1500)), ("2m", .seconds(120)),
            ("1h", .seconds(3600)), ("100us", .microseconds(100)), ("250ns", .nanoseconds(250)), ("0ms", .zero),
        ]
        for (text, expected) in cases {
            let configuration = try parseBroker(yaml: "limits: {pipelines: {minimumInterval: \(text)}}")
            #expect(configuration.service.hub.limits.minimumInterval == expected, "\(text)")
        }
    }

    @Test func theShippedExampleIsValid() throws {
        let path = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("examples/hub.yml").path
        let configuration = try loadBroker(contentsOf: path)
        try configuration.check()
        #expect(configuration.file == path)
        // The example uses every section.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for key in BrokerConfiguration.topLevelKeys + BrokerConfiguration.limitsKeys
            + BrokerConfiguration.pipelineLimitsKeys + BrokerConfiguration.authKeys
            + BrokerConfiguration.subjectKeys + BrokerConfiguration.pipelineKeys + BrokerConfiguration.listenKeys
            + SQLiteStorage.settingKeys + BrokerConfiguration.defaultsKeys + BrokerConfiguration.historyKeys {
            #expect(text.contains("\(key):"), "examples/hub.yml does not show '\(key)'")
        }
        #expect(!configuration.subjects.isEmpty && !configuration.triggers.isEmpty && !configuration.pipelines.isEmpty)
        #expect(configuration.pipelines.contains { $0.shared } && configuration.pipelines.contains { !$0.shared })
    }

    @Test func aMissingFileIsAnError() {
        #expect(throws: ConfigurationError.self) {
            try loadBroker(contentsOf: "/nonexistent/hub.yml")
        }
        do {
            _ = try loadBroker(contentsOf: "/nonexistent/hub.yml")
        } catch {
            #expect(error.description.hasPrefix("/nonexistent/hub.yml:1:1: cannot read the file"))
        }
    }
}
