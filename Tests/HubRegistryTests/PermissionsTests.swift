import HubRegistry
import HubValue
import HubWire
import Testing

@Suite("Name patterns and permissions")
struct PermissionsTests {
    static func pattern(_ text: String) throws -> NamePattern { try NamePattern(text) }

    @Test func starIsOneSegmentAndGreaterIsTheRest() throws {
        let star = try Self.pattern("prices.*")
        #expect(star.matches("prices.AAPL"))
        #expect(!star.matches("prices"))
        #expect(!star.matches("prices.AAPL.bid"))
        #expect(!star.matches("orders.AAPL"))
        let rest = try Self.pattern("orders.>")
        #expect(rest.matches("orders.eu"))
        #expect(rest.matches("orders.eu.paid"))
        #expect(!rest.matches("orders"))
        #expect(!rest.matches("ordersx.eu"))
        let all = try Self.pattern(">")
        #expect(all.matches("x") && all.matches("a.b.c"))
        let exact = try Self.pattern("refresh")
        #expect(exact.matches("refresh") && !exact.matches("refresh.now") && !exact.matches("refres"))
        let middle = try Self.pattern("a.*.c")
        #expect(middle.matches("a.b.c") && !middle.matches("a.c") && !middle.matches("a.b.c.d"))
        #expect(try Self.pattern("$sys.*").matches("$sys.stats"))
    }

    @Test func malformedPatternsAreRefusedWithTheReason() {
        for (text, says) in [("", "empty"), ("a..b", "empty segment"), ("a.>.b", "'>' can only end"), ("pri*", "whole segments")] {
            #expect(throws: HubError.self) { try NamePattern(text) }
            do {
                _ = try NamePattern(text)
            } catch {
                #expect(error.message.contains(says), "\(text): \(error.message)")
            }
        }
    }

    @Test func denyWinsAndNothingIsAllowedWithoutAnAllowRule() throws {
        let permissions = try Permissions(json: [
            "subscribe": ["prices.*", "orders.>"],
            "publish": ["orders.>"],
            "deny": ["subscribe": ["orders.secret.>"], "publish": ["orders.audit"]],
        ])
        #expect(permissions.allows(.subscribe, "prices.AAPL"))
        #expect(permissions.allows(.subscribe, "orders.eu"))
        #expect(!permissions.allows(.subscribe, "orders.secret.x"))
        #expect(permissions.allows(.publish, "orders.eu"))
        #expect(!permissions.allows(.publish, "orders.audit"))
        #expect(!permissions.allows(.trigger, "refresh"))
        #expect(!permissions.allowsAny(.pipelines))
        #expect(!permissions.allows(.admin, "metrics"))
        #expect(Permissions.everything.allows(.admin, "$sys.stats"))
        #expect(!Permissions.nothing.allows(.subscribe, "x"))
    }

    @Test func refusalsNameTheNameAndThePermission() throws {
        let permissions = try Permissions(json: ["subscribe": ["prices.*"]])
        do {
            try permissions.check(.publish, "prices.AAPL", doing: "send to")
            Issue.record("expected forbidden")
        } catch {
            #expect(error.code == .forbidden)
            #expect(error.message == "not allowed to send to 'prices.AAPL' (no publish permission for it)")
            #expect(error.data == ["name": "prices.AAPL", "permission": "publish"])
        }
    }

    @Test func unknownPermissionsAndBadPatternsAreRefused() {
        let cases: [(Value, String)] = [
            (["subscibe": ["x"]], "unknown permission 'subscibe'"),
            (["subscribe": "x"], "must be a list of name patterns"),
            (["subscribe": ["a..b"]], "permissions.subscribe: name pattern 'a..b' has an empty segment"),
            (["deny": ["publsh": ["x"]]], "permissions.deny: unknown permission 'publsh'"),
            (["x"], "must be an object"),
        ]
        for (json, says) in cases {
            do {
                _ = try Permissions(json: json)
                Issue.record("\(json) was accepted")
            } catch {
                #expect(error.message.contains(says), "\(error.message)")
            }
        }
    }
}
