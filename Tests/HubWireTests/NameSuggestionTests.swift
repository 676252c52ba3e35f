import HubWire
import Testing

/// "Did you mean …?": which near misses are suggested, and which names are not.
@Suite("Name suggestions")
struct NameSuggestionTests {
    static let commands = ["serve", "subscribe", "send", "complete", "fail", "trigger", "list", "bench"]

    @Test(arguments: [
        ("subscibe", "subscribe"),  // a letter missing
        ("subscirbe", "subscribe"),  // two neighbours swapped
        ("sned", "send"),  // short: one swap
        ("lsit", "list"),
        ("Subscribe", "subscribe"),  // case
        ("LIST", "list"),
        ("sub", "subscribe"),  // a unique prefix of 3 or more
        ("compelte", "complete"),
        ("trigge", "trigger"),
        ("serv", "serve"),
    ])
    func nearMissesAreSuggested(typed: String, expected: String) {
        #expect(NameSuggestion.closest(to: typed, among: Self.commands) == expected)
    }

    @Test(arguments: ["publish", "x", "se", "subscriptions", "frobnicate", "xyzzy", ""])
    func farNamesAreNot(typed: String) {
        #expect(NameSuggestion.closest(to: typed, among: Self.commands) == nil)
    }

    @Test func theClosestWinsAndTiesGoToTheFirstSorted() {
        #expect(NameSuggestion.closest(to: "scna", among: ["scan", "span", "can"]) == "scan")
        #expect(NameSuggestion.closest(to: "bat", among: ["cat", "bar"]) == "bar")
    }
}
