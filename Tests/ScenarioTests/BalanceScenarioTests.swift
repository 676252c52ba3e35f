import HubClient
import HubValue
import Testing

/// examples/balance: a balance read on `refresh`, formatted as USD, redacted while `active` is false.
@Suite("Scenario: balance")
struct BalanceScenarioTests {
    static func view(_ balance: String, _ at: Value) -> Value {
        ["balance": .string(balance), "refreshedAt": at]
    }

    @Test func refreshFormatsRedactsWhileInactiveAndShowsAgain() async throws {
        try await Scenario.with("balance") { scenario in
            let client = scenario.client
            let view = scenario.subscribe("balanceView")
            try await scenario.waitForPipelineSubscribers(1, of: "balanceView")

            // The balance changes, but the view shows it only on a refresh.
            try await client.send(1234.5, to: "account")
            try await client.trigger("refresh", key: "2026-11-22T04:00:00Z")
            #expect(try await view.next() == Self.view("$1,234.50", "2026-11-22T04:00:00Z"))

            try await client.send(false, to: "active")
            #expect(try await view.next() == Self.view("••••", "2026-11-22T04:00:00Z"))
            // A refresh while inactive stays redacted, with its new date.
            try await client.send(98765432.1, to: "account")
            try await client.trigger("refresh", key: "2026-11-22T04:05:00Z")
            #expect(try await view.next() == Self.view("••••", "2026-11-22T04:05:00Z"))

            try await client.send(true, to: "active")
            #expect(try await view.next() == Self.view("$98,765,432.10", "2026-11-22T04:05:00Z"))

            // Another screen shows the last refreshed balance at once.
            let other = try await scenario.connectAnother()
            let late = scenario.subscribe("balanceView", client: other)
            #expect(try await late.next() == Self.view("$98,765,432.10", "2026-11-22T04:05:00Z"))

            // A refresh without a key has no date.
            try await client.trigger("refresh")
            #expect(try await view.next() == Self.view("$98,765,432.10", .null))
        }
    }

    @Test(arguments: [
        (0.0, "$0.00"), (5.5, "$5.50"), (-12.05, "-$12.05"), (999.999, "$1,000.00"), (1000.07, "$1,000.07"),
        (1_000_000, "$1,000,000.00"), (1_234_567_890.99, "$1,234,567,890.99"), (2_000_000_000_000, "$2000,000,000,000.00"),
    ])
    func theAmountIsFormattedAsUSD(amount: Double, formatted: String) async throws {
        try await Scenario.with("balance") { scenario in
            let view = scenario.subscribe("balanceView")
            try await scenario.waitForPipelineSubscribers(1, of: "balanceView")
            try await scenario.client.send(.double(amount), to: "account")
            try await scenario.client.trigger("refresh", key: "now")
            #expect(try await view.next() == Self.view(formatted, "now"))
        }
    }
}
