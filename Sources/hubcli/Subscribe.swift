import ArgumentParser
import HubClient
import HubEngine
import HubTransport
import HubValue
import HubWire

/// `hubcli subscribe`: prints a subscription's values, one compact JSON value per line.
struct Subscribe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Subscribe to a subject, pipeline or trigger and print its values.",
        usage: """
            hubcli subscribe <name> [--since <offset>[@<epoch>] | --last <k>] [--offsets] [--demand <n>|unlimited] [--window <n>] [--count <n>] [--buffer <n>] [--overflow <policy>] [--no-batch] [--reconnect] [--url <url>]
            hubcli subscribe --pipeline <text> [options]
            """,
        discussion: """
            Opens one subscription on the hub and prints every value it delivers to
            standard output as one line of compact JSON, so that the output can be
            piped (for example into jq). Status and errors go to standard error.
            When the reader of standard output goes away ('| head -3'), hubcli
            cancels the subscription and exits 0.

            Demand is explicit, as in Combine: the hub sends nothing that was not
            requested. --demand is the initial demand sent with the subscription
            (default: the window); --window N keeps at most N values requested ahead
            of what has been printed, requesting more as values are printed;
            --demand unlimited requests everything at once. With --count N the
            subscription is cancelled after N values and hubcli exits 0; no more
            than N values are ever requested.

            Values a subject publishes while this subscription has no demand wait
            in its buffer on the hub: --buffer N sets its size, --overflow what
            happens when it is full (error: the subscription fails with overflow;
            dropOldest, dropNewest, or latest: keep only the newest). The hub sends
            several values in one message (the batch form; output is unchanged);
            --no-batch asks for one message per value.

            A subject with history (configuration `history`, or `durable`) numbers
            its values with offsets within an epoch. --since OFFSET[@EPOCH] starts
            after that offset (of that epoch; without one, the subject's current
            epoch), --last K with its last K values, then goes on live; if the hub
            no longer holds them, hubcli fails with resume_failed. --offsets prints
            each value's offset before it ('OFFSET VALUE'; '-' for a name without
            history), and says the epoch on standard error.

            --reconnect: when the connection is lost (the broker restarts, the
            network drops), hubcli says so on standard error, reconnects with
            back-off and subscribes again; it also waits for a hub that is not up
            yet. On a subject with history it resumes after the last value it
            printed: nothing is missed or printed twice (a subject that is not
            durable begins a new epoch when its broker restarts: hubcli says that
            values were missed and goes on live). On a name without history,
            values published while it was disconnected are missed. --count counts
            across reconnections.

            The command ends with status 0 when the subscription completes (or
            --count is reached), and with a non-zero status when it fails: the
            hub's error code and message are printed on standard error.

            Examples:
              hubcli subscribe prices
              hubcli subscribe prices --count 10 --window 4
              hubcli subscribe --pipeline 'prices | map(.bid) | filter(. > 100)'
              hubcli subscribe ticks --buffer 1 --overflow latest --reconnect
              hubcli subscribe orders --since 41@5f0c2a9e1b3d4c7a --offsets --reconnect
              hubcli subscribe orders --last 10 --count 10

            \(ClientExit.help)
            """
    )

    @OptionGroup var connection: ClientOptions

    @Argument(help: ArgumentHelp("The subject, named pipeline or trigger to subscribe to.", valueName: "name"))
    var name: String?

    @Option(help: ArgumentHelp("Pipeline source text to subscribe to instead of a name.", valueName: "text"))
    var pipeline: String?

    @Option(help: ArgumentHelp(
        "The initial demand: a number ≥ 0 or 'unlimited' (default: the window).", valueName: "n|unlimited"))
    var demand: String?

    @Option(help: ArgumentHelp(
        "How many values to keep requested ahead of the output (≥ 1; default 65536: a consumer that falls behind holds them, not the hub's buffer).",
        valueName: "n"))
    var window = HubValues.defaultPrefetch

    @Option(help: ArgumentHelp("Stop (cancel) after this many values and exit 0.", valueName: "n"))
    var count: Int?

    @Option(help: ArgumentHelp(
        "The hub's buffer for values that arrive while there is no demand (default: the subject's, else the hub's).",
        valueName: "n"))
    var buffer: Int?

    @Option(help: ArgumentHelp(
        "When that buffer is full: error, dropOldest, dropNewest or latest (default: the subject's, else error).",
        valueName: "policy"))
    var overflow: OverflowPolicy?

    @Flag(inversion: .prefixedNo, help: "Let the hub send several values in one message (default), or not.")
    var batch = true

    @Flag(help: "After a lost connection, reconnect and subscribe again (resuming where it stopped on a subject with history).")
    var reconnect = false

    @Option(help: ArgumentHelp(
        "Start after this offset of a subject with history (of EPOCH; default: the current epoch).",
        valueName: "offset[@epoch]"))
    var since: String?

    @Option(help: ArgumentHelp("Start with the last K values of a subject with history.", valueName: "k"))
    var last: Int?

    @Flag(help: "Print each value's offset before it: 'OFFSET VALUE' ('-' without history).")
    var offsets = false

    func validate() throws {
        switch (name, pipeline) {
        case (nil, nil): throw ValidationError("give a <name> or --pipeline <text>")
        case (.some, .some): throw ValidationError("give either a <name> or --pipeline, not both")
        default: break
        }
        guard window >= 1 else { throw ValidationError("--window must be at least 1, got \(window)") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1, got \(count)") }
        if let demand, parsedDemand(demand) == nil {
            throw ValidationError("--demand must be a number ≥ 0 or 'unlimited', got '\(demand)'")
        }
        if let buffer, buffer < 1 { throw ValidationError("--buffer must be at least 1, got \(buffer)") }
        if since != nil, last != nil { throw ValidationError("give either --since or --last, not both") }
        if pipeline != nil, since != nil || last != nil {
            throw ValidationError("--since and --last need a subject <name> (a pipeline keeps no history)")
        }
        if let last, last < 0 { throw ValidationError("--last must be at least 0, got \(last)") }
        if let since, Self.parseSince(since) == nil {
            throw ValidationError("--since must be OFFSET or OFFSET@EPOCH with an offset from 0 to 9007199254740991, got '\(since)'")
        }
    }

    /// `OFFSET` or `OFFSET@EPOCH`.
    static func parseSince(_ text: String) -> HistorySince? {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        guard let offset = UInt64(parts[0]), offset <= HistorySince.maxNumber else { return nil }
        if parts.count == 2 {
            guard !parts[1].isEmpty else { return nil }
            return .offset(offset, epoch: String(parts[1]))
        }
        return .offset(offset, epoch: nil)
    }

    /// Where the first subscription starts.
    private var start: HistorySince? {
        if let since { return Self.parseSince(since) }
        return last.map { .last(UInt64($0)) }
    }

    private func parsedDemand(_ text: String) -> Subscribers.Demand? {
        if text == "unlimited" { return .unlimited }
        guard let number = Int(text), number >= 0 else { return nil }
        return .max(number)
    }

    /// What the client does after a lost connection: nothing, or reconnect forever with back-off.
    private var policy: ReconnectPolicy {
        reconnect ? ReconnectPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(5)) : .disabled
    }

    func run() async throws {
        let client = try await connectClient()
        let target = pipeline.map { "pipeline '\($0)'" } ?? "'\(name!)'"
        var options = SubscribeOptions(batch: nil, buffer: buffer, overflow: overflow, since: start)
        var printed = 0
        let epochs = EpochReporter(name: name ?? "", enabled: offsets)
        while true {
            let publisher = pipeline.map { client.subscribe(pipeline: $0, options: options) }
                ?? client.subscribe(to: name!, options: options)
            let left = count.map { $0 - printed }
            var initial = demand.flatMap(parsedDemand) ?? .max(window)
            if let left, initial > left { initial = .max(left) }
            let plan = PrintingSubscriber.Plan(initialDemand: initial, window: window, count: left, offsets: offsets, epochs: epochs)
            let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<PrintingSubscriber.Outcome, Never>) in
                publisher.entries.subscribe(PrintingSubscriber(plan: plan) { continuation.resume(returning: $0) })
            }
            // A later subscription (after a lost connection) starts after what was printed.
            options.since = outcome.resumePoint ?? options.since
            printed += outcome.printed
            switch outcome {
            case .completed:
                await client.close()
                Output.status("completed after \(printed) value\(printed == 1 ? "" : "s")")
                return
            case .reachedCount:
                await client.close()
                Output.status("stopped after \(printed) value\(printed == 1 ? "" : "s") (--count)")
                return
            case .outputClosed:
                await client.close()
                return
            case let .failed(error, _, _) where reconnect && Self.isConnectionLoss(error):
                Output.status(
                    "\(ClientExit.describe(error)); subscribing to \(target) again once reconnected "
                        + "(values published meanwhile are missed: it keeps no history)")
            case let .failed(error, _, _) where reconnect && error.code == .resumeFailed:
                // A subject that lost its history (a restarted broker, not durable): say so, go on live.
                Output.status("\(ClientExit.describe(error)); going on with the values from now")
                options.since = nil
            case let .failed(error, _, _):
                await client.close()
                throw ClientExit.report(error)
            }
        }
    }

    /// A connected client; with --reconnect, a hub that is not up yet is waited for.
    private func connectClient() async throws -> HubClient {
        var attempt = 0
        while true {
            do throws(HubClientError) {
                return try await connection.connect(reconnect: policy, batch: batch)
            } catch where reconnect && (error.code == .connectionFailed || error.code == .timeout) {
                attempt += 1
                if attempt == 1 { Output.status("\(error.message); retrying until the hub is up") }
                try await Task.sleep(for: policy.delay(forAttempt: attempt))
            } catch {
                throw ClientExit.report(error)
            }
        }
    }

    /// Whether `error` ended the subscription because the connection went away
    /// (lost, or the broker shutting down), rather than the subscription itself.
    static func isConnectionLoss(_ error: HubClientError) -> Bool {
        error.code == .disconnected || error.code == HubClientError.Code(.shuttingDown)
    }
}

/// Says a subscription's epoch on standard error (for --offsets) when it first shows
/// or changes. Used on the client's loop only.
final class EpochReporter: @unchecked Sendable {
    private let name: String
    private let enabled: Bool
    private var epoch: String?

    init(name: String, enabled: Bool) {
        self.name = name
        self.enabled = enabled
    }

    func saw(_ entry: HubEntry) {
        guard enabled, let epoch = entry.epoch, epoch != self.epoch else { return }
        self.epoch = epoch
        Output.status("'\(name)' epoch \(epoch) (resume with --since OFFSET@\(epoch))")
    }
}

/// Prints values on the client's event loop and keeps the demand window full.
final class PrintingSubscriber: Subscriber {
    typealias Input = HubEntry
    typealias Failure = HubClientError

    /// How much to request.
    struct Plan {
        var initialDemand: Subscribers.Demand
        var window: Int
        var count: Int?
        /// Whether each line starts with the value's offset.
        var offsets = false
        var epochs: EpochReporter?
    }

    /// How the subscription ended.
    enum Outcome: Sendable {
        case completed(Int)
        case reachedCount(Int)
        /// Standard output's reader went away: the subscription was cancelled.
        case outputClosed(Int)
        /// Failed; with where a new subscription resumes (after the last value printed).
        case failed(HubClientError, printed: Int, resumePoint: HistorySince?)

        /// The values printed.
        var printed: Int {
            switch self {
            case let .completed(n), let .reachedCount(n), let .outputClosed(n), let .failed(_, n, _): n
            }
        }

        /// After the last value printed, when it had an offset.
        var resumePoint: HistorySince? {
            if case let .failed(_, _, point) = self { return point }
            return nil
        }
    }

    private let plan: Plan
    private var finish: ((Outcome) -> Void)?
    private var subscription: (any Subscription)?
    private var granted = Subscribers.Demand.none
    private var printed = 0
    private var lastPrinted: HistorySince?

    init(plan: Plan, finish: @escaping (Outcome) -> Void) {
        self.plan = plan
        self.finish = finish
    }

    func receive(subscription: any Subscription) {
        self.subscription = subscription
        granted = plan.initialDemand
        if plan.initialDemand != .none { subscription.request(plan.initialDemand) }
    }

    func receive(_ input: HubEntry) -> Subscribers.Demand {
        guard finish != nil else { return .none }
        plan.epochs?.saw(input)
        let written: Bool
        if plan.offsets {
            written = Output.line((input.offset.map(String.init) ?? "-") + " " + input.value.jsonString())
        } else {
            written = Output.value(input.value)
        }
        if let offset = input.offset { lastPrinted = .offset(offset, epoch: input.epoch) }
        guard written else {
            subscription?.cancel()
            subscription = nil
            end(.outputClosed(printed))
            return .none
        }
        printed += 1
        if let count = plan.count, printed >= count {
            subscription?.cancel()
            subscription = nil
            end(.reachedCount(printed))
            return .none
        }
        guard !granted.isUnlimited else { return .none }
        // Keep `window` values requested ahead of what was printed, never past --count.
        let outstanding = (granted.max ?? 0) - printed
        var more = plan.window - outstanding
        if let count = plan.count { more = min(more, count - (granted.max ?? 0)) }
        guard more > 0 else { return .none }
        granted += .max(more)
        return .max(more)
    }

    func receive(completion: Subscribers.Completion<HubClientError>) {
        subscription = nil
        switch completion {
        case .finished: end(.completed(printed))
        case let .failure(error): end(.failed(error, printed: printed, resumePoint: lastPrinted))
        }
    }

    private func end(_ outcome: Outcome) {
        let finish = self.finish
        self.finish = nil
        finish?(outcome)
    }
}

extension OverflowPolicy: ExpressibleByArgument {
    /// What `--overflow` accepts: the policies a subscriber may ask for (`block` is a
    /// subject's setting, in the broker's configuration).
    public init?(argument: String) {
        guard let policy = OverflowPolicy(rawValue: argument), OverflowPolicy.subscriberChoices.contains(policy) else {
            return nil
        }
        self = policy
    }

    public static var allValueStrings: [String] { subscriberChoices.map(\.rawValue) }
}
