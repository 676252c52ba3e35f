import Foundation
import HubClient
import HubValue
import Testing

/// examples/balance: a balance read on `refresh`, formatted as USD (`formatCurrency`),
/// stamped with the broker's time of the refresh (`formatDate(now())`), redacted while
/// `active` is false.
@Suite("Scenario: balance")
struct BalanceScenarioTests {
    /// The broker's clock in milliseconds, as `now()` reads it.
    static func milliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// `value` is the view `{balance, refreshedAt}` with `balance`, and `refreshedAt` an ISO 8601
    /// instant with milliseconds within `window` (taken around the refresh); returns `refreshedAt`.
    static func expectView(_ value: Value?, _ balance: String, within window: ClosedRange<Int64>) -> String? {
        #expect(value?["balance"] == .string(balance), "\(String(describing: value))")
        guard let text = value?["refreshedAt"]?.stringValue else {
            Issue.record("no refreshedAt in \(String(describing: value))")
            return nil
        }
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = parser.date(from: text) else {
            Issue.record("refreshedAt is not ISO 8601 with milliseconds: \(text)")
            return nil
        }
        #expect(text.hasSuffix("Z") && text.count == 24, "\(text)")
        let ms = Int64((date.timeIntervalSince1970 * 1000).rounded())
        #expect(window.contains(ms), "\(text) is not within the refresh's window \(window)")
        return text
    }

    @Test func refreshFormatsStampsRedactsWhileInactiveAndShowsAgain() async throws {
        try await Scenario.with("balance") { scenario in
            let client = scenario.client
            let view = scenario.subscribe("balanceView")
            try await scenario.waitForPipelineSubscribers(1, of: "balanceView")

            // The balance changes, but the view shows it only on a refresh, stamped with its time.
            try await client.send(1234.5, to: "account")
            var before = Self.milliseconds()
            try await client.trigger("refresh")
            let first = Self.expectView(try await view.next(), "$1,234.50", within: before...Self.milliseconds())

            try await client.send(false, to: "active")
            #expect(try await view.next() == ["balance": "••••", "refreshedAt": first.map(Value.string) ?? .null])
            // A refresh while inactive stays redacted, with its new time.
            try await client.send(98765432.1, to: "account")
            before = Self.milliseconds()
            try await client.trigger("refresh")
            let second = Self.expectView(try await view.next(), "••••", within: before...Self.milliseconds())

            try await client.send(true, to: "active")
            let shown: Value = ["balance": "$98,765,432.10", "refreshedAt": second.map(Value.string) ?? .null]
            #expect(try await view.next() == shown)

            // Another screen shows the last refreshed balance at once.
            let other = try await scenario.connectAnother()
            let late = scenario.subscribe("balanceView", client: other)
            #expect(try await late.next() == shown)
        }
    }

    @Test(arguments: [
        (0.0, "$0.00"), (5.5, "$5.50"), (-12.05, "-$12.05"), (999.999, "$1,000.00"), (1000.07, "$1,000.07"),
        (1_000_000, "$1,000,000.00"), (1_234_567_890.99, "$1,234,567,890.99"), (2_000_000_000_000, "$2,000,000,000,000.00"),
    ])
    func theAmountIsFormattedAsUSD(amount: Double, formatted: String) async throws {
        try await Scenario.with("balance") { scenario in
            let view = scenario.subscribe("balanceView")
            try await scenario.waitForPipelineSubscribers(1, of: "balanceView")
            try await scenario.client.send(.double(amount), to: "account")
            let before = Self.milliseconds()
            try await scenario.client.trigger("refresh")
            _ = Self.expectView(try await view.next(), formatted, within: before...Self.milliseconds())
        }
    }
}
