import ArgumentParser
import HubClient
import HubEngine
import HubValue
import HubTransport

/// `hubcli subscribe`: prints a subscription's values, one compact JSON value per line.
struct Subscribe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Subscribe to a subject, pipeline or trigger and print its values.",
        usage: """
            hubcli subscribe <name> [--demand <n>|unlimited] [--window <n>] [--count <n>] [--url <url>] [--token <token>]
            hubcli subscribe --pipeline <text> [options]
            """,
        discussion: """
            Opens one subscription on the hub and prints every value it delivers to
            standard output as one line of compact JSON, so that the output can be
            piped (for example into jq). Status and errors go to standard error.

            Demand is explicit, as in Combine: the hub sends nothing that was not
            requested. --demand is the initial demand sent with the subscription
            (default: the window); --window N keeps at most N values requested ahead
            of what has been printed, requesting more as values are printed;
            --demand unlimited requests everything at once. With --count N the
            subscription is cancelled after N values and hubcli exits 0; no more
            than N values are ever requested.

            The command ends with status 0 when the subscription completes (or
            --count is reached), and with a non-zero status when it fails: the
            hub's error code and message are printed on standard error.

            Examples:
              hubcli subscribe prices
              hubcli subscribe prices --count 10 --window 4
              hubcli subscribe --pipeline 'prices | map(.bid) | filter(. > 100)'

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

    @Option(help: ArgumentHelp("How many values to keep requested ahead of the output (≥ 1).", valueName: "n"))
    var window = 16

    @Option(help: ArgumentHelp("Stop (cancel) after this many values and exit 0.", valueName: "n"))
    var count: Int?

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
    }

    private func parsedDemand(_ text: String) -> Subscribers.Demand? {
        if text == "unlimited" { return .unlimited }
        guard let number = Int(text), number >= 0 else { return nil }
        return .max(number)
    }

    func run() async throws {
        let client: HubClient
        do throws(HubClientError) {
            client = try await connection.connect()
        } catch {
            throw ClientExit.report(error)
        }
        let publisher = pipeline.map { client.subscribe(pipeline: $0) } ?? client.subscribe(to: name!)
        var initial = demand.flatMap(parsedDemand) ?? .max(window)
        if let count, initial > count { initial = .max(count) }
        let plan = PrintingSubscriber.Plan(initialDemand: initial, window: window, count: count)
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<PrintingSubscriber.Outcome, Never>) in
            publisher.subscribe(PrintingSubscriber(plan: plan) { continuation.resume(returning: $0) })
        }
        await client.close()
        switch outcome {
        case let .completed(printed):
            Output.status("completed after \(printed) value\(printed == 1 ? "" : "s")")
        case let .reachedCount(printed):
            Output.status("stopped after \(printed) value\(printed == 1 ? "" : "s") (--count)")
        case let .failed(error, _):
            throw ClientExit.report(error)
        }
    }
}

/// Prints values on the client's event loop and keeps the demand window full.
final class PrintingSubscriber: Subscriber {
    typealias Input = Value
    typealias Failure = HubClientError

    /// How much to request.
    struct Plan {
        var initialDemand: Subscribers.Demand
        var window: Int
        var count: Int?
    }

    /// How the subscription ended.
    enum Outcome: Sendable {
        case completed(Int)
        case reachedCount(Int)
        case failed(HubClientError, printed: Int)
    }

    private let plan: Plan
    private var finish: ((Outcome) -> Void)?
    private var subscription: (any Subscription)?
    private var granted = Subscribers.Demand.none
    private var printed = 0

    init(plan: Plan, finish: @escaping (Outcome) -> Void) {
        self.plan = plan
        self.finish = finish
    }

    func receive(subscription: any Subscription) {
        self.subscription = subscription
        granted = plan.initialDemand
        if plan.initialDemand != .none { subscription.request(plan.initialDemand) }
    }

    func receive(_ input: Value) -> Subscribers.Demand {
        guard finish != nil else { return .none }
        Output.value(input)
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
        case let .failure(error): end(.failed(error, printed: printed))
        }
    }

    private func end(_ outcome: Outcome) {
        let finish = self.finish
        self.finish = nil
        finish?(outcome)
    }
}
