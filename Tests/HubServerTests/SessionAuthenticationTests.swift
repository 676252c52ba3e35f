import HubRegistry
@testable import HubServer
import HubWire
import Testing

/// Every transition of a session's authentication and admission, without a socket: the
/// inputs the session feeds in and the actions it carries out.
@Suite("SessionAuthentication")
struct SessionAuthenticationTests {
    typealias Machine = SessionAuthentication

    private static let alice = Authentication(
        identity: Identity(name: "alice", permissions: .everything), expiresAt: 1_000)
    private static let aliceLater = Authentication(
        identity: Identity(name: "alice", permissions: .everything), expiresAt: 2_000)
    private static let bob = Authentication(identity: Identity(name: "bob", permissions: .everything))
    private static let full = HubError(.limitExceeded, "the server has 1 connections (its limit)")
    private static let firstHello = "authenticate with a hello carrying a token first"

    /// A machine that requires authentication, started without a bearer token.
    private func awaitingHello() -> Machine {
        var machine = Machine(requiresAuthentication: true, authenticationTimeout: .seconds(5))
        #expect(machine.start() == [.sendWelcome, .joinWaitingPool, .startAuthenticationTimer])
        return machine
    }

    /// A machine authenticated as alice with `token-a` through a hello, and admitted.
    private func authenticatedAlice() -> Machine {
        var machine = awaitingHello()
        #expect(machine.hello(.accepted(Self.alice, token: "token-a"))
            == [.leaveWaitingPool, .cancelAuthenticationTimer, .admit(Self.alice)])
        #expect(machine.admitted() == [.identify("alice"), .watchExpiry(at: 1_000)])
        return machine
    }

    // MARK: Without authentication

    @Test func withoutAuthenticationTheClientIsAdmittedAsAnonymousBeforeWelcome() {
        var machine = Machine(requiresAuthentication: false)
        #expect(machine.phase == .new)
        #expect(!machine.isAuthenticated)
        let anonymous = Authentication(identity: .anonymous)
        #expect(machine.start() == [.admit(anonymous)])
        #expect(!machine.isAuthenticated)
        #expect(machine.admitted() == [.sendWelcome])
        #expect(machine.phase == .open)
        #expect(machine.authentication == anonymous)
        #expect(machine.token == nil)
        #expect(machine.received(.message) == nil)
        #expect(machine.received(.binary) == nil)
        #expect(machine.received(.undecodable("not JSON")) == nil)
        #expect(machine.closed() == [.leaveAdmission(identity: "anonymous")])
        #expect(machine.closed() == [])
    }

    @Test func withoutAuthenticationARefusedAdmissionClosesWithoutSendingAnything() {
        var machine = Machine(requiresAuthentication: false)
        _ = machine.start()
        #expect(machine.admissionRefused(Self.full) == [.refuseConnection(Self.full, welcomed: false)])
        #expect(machine.phase == .ending)
        #expect(!machine.isAuthenticated)
        #expect(machine.closed() == [])
    }

    @Test func withoutAuthenticationAHelloChangesNothingAndABearerIsIgnored() {
        var machine = Machine(requiresAuthentication: false, bearer: .refused("bad"))
        #expect(machine.start() == [.admit(Authentication(identity: .anonymous))])
        _ = machine.admitted()
        #expect(machine.hello(.none) == [])
        #expect(machine.hello(.refused("bad")) == [])
        #expect(machine.hello(.accepted(Self.bob, token: "b")) == [])
        #expect(machine.authentication?.identity == .anonymous)
    }

    @Test func startingTwiceDoesNothing() {
        var machine = awaitingHello()
        #expect(machine.start() == [])
        #expect(machine.phase == .awaitingHello)
    }

    // MARK: Bearer token

    @Test func anAcceptedBearerIsAdmittedAtStartWithoutWaiting() {
        var machine = Machine(requiresAuthentication: true, bearer: .accepted(Self.alice, token: "token-a"))
        #expect(machine.start() == [.sendWelcome, .admit(Self.alice)])
        #expect(!machine.isWaitingInPool)
        #expect(!machine.authenticationTimerRuns)
        #expect(machine.admitted() == [.identify("alice"), .watchExpiry(at: 1_000)])
        #expect(machine.authentication == Self.alice)
        #expect(machine.token == "token-a")
        #expect(machine.expiryTimerRuns)
        #expect(machine.received(.message) == nil)
    }

    @Test func aRefusedBearerIsRefusedAtOnceAfterWelcome() {
        var machine = Machine(requiresAuthentication: true, bearer: .refused("the bearer token is not accepted: no"))
        #expect(machine.start() == [.sendWelcome, .refuse("the bearer token is not accepted: no")])
        #expect(machine.phase == .ending)
        #expect(!machine.isWaitingInPool)
        #expect(machine.closed() == [])
    }

    @Test func aBearerWhoseIdentityIsAtItsLimitGetsTheErrorThenTheClose() {
        var machine = Machine(requiresAuthentication: true, bearer: .accepted(Self.bob, token: "b"))
        _ = machine.start()
        #expect(machine.admissionRefused(Self.full) == [.refuseConnection(Self.full, welcomed: true)])
        #expect(!machine.isAuthenticated)
        #expect(machine.admittedIdentity == nil)
        #expect(machine.closed() == [])
    }

    // MARK: Hello

    @Test func aHelloWithATokenLeavesThePoolStopsTheClockAndIsAdmitted() {
        let machine = authenticatedAlice()
        #expect(machine.phase == .open)
        #expect(machine.token == "token-a")
        #expect(!machine.isWaitingInPool)
        #expect(!machine.authenticationTimerRuns)
        #expect(machine.expiryTimerRuns)
        #expect(machine.admittedIdentity == "alice")
    }

    @Test func aTokenWithoutExpiryStartsNoExpiryTimer() {
        var machine = awaitingHello()
        _ = machine.hello(.accepted(Self.bob, token: "b"))
        #expect(machine.admitted() == [.identify("bob"), .watchExpiry(at: nil)])
        #expect(!machine.expiryTimerRuns)
        #expect(machine.tokenExpired() == [])
    }

    @Test func aHelloWithoutATokenBeforeAuthenticationIsRefused() {
        var machine = awaitingHello()
        #expect(machine.hello(.none) == [.cancelAuthenticationTimer, .refuse("hello carries no token")])
        #expect(machine.phase == .ending)
        // The pool is left when the connection closes.
        #expect(machine.isWaitingInPool)
        #expect(machine.closed() == [.leaveWaitingPool])
    }

    @Test func aHelloWithARefusedTokenIsRefused() {
        var machine = awaitingHello()
        #expect(machine.hello(.refused("unknown token")) == [.cancelAuthenticationTimer, .refuse("unknown token")])
    }

    @Test func aHelloWithoutATokenAfterAuthenticationChangesNothing() {
        var machine = authenticatedAlice()
        #expect(machine.hello(.none) == [])
        #expect(machine.authentication == Self.alice)
        #expect(machine.token == "token-a")
    }

    @Test func aSecondHelloOfTheSameIdentityRefreshesTokenPermissionsAndExpiry() {
        var machine = authenticatedAlice()
        #expect(machine.hello(.accepted(Self.aliceLater, token: "token-b"))
            == [.clearPermissionCache, .watchExpiry(at: 2_000)])
        #expect(machine.authentication == Self.aliceLater)
        #expect(machine.token == "token-b")
        #expect(machine.phase == .open)
        // Still counted once, as the same identity.
        #expect(machine.closed() == [.cancelExpiryTimer, .leaveAdmission(identity: "alice")])
    }

    @Test func aSecondHelloOfAnotherIdentityIsRefused() {
        var machine = authenticatedAlice()
        #expect(machine.hello(.accepted(Self.bob, token: "b")) == [
            .cancelExpiryTimer, .refuse("a new hello must authenticate the same identity ('alice', not 'bob')"),
        ])
        #expect(machine.authentication == Self.alice)
        #expect(machine.closed() == [.leaveAdmission(identity: "alice")])
    }

    @Test func aSecondHelloWithARefusedTokenIsRefusedEvenWhenAuthenticated() {
        var machine = authenticatedAlice()
        #expect(machine.hello(.refused("expired")) == [.cancelExpiryTimer, .refuse("expired")])
    }

    @Test func aHelloWhileTheAdmissionDecidesIsIgnored() {
        var machine = awaitingHello()
        _ = machine.hello(.accepted(Self.alice, token: "a"))
        #expect(machine.hello(.accepted(Self.bob, token: "b")) == [])
        #expect(machine.admitted() == [.identify("alice"), .watchExpiry(at: 1_000)])
    }

    @Test func anIdentityAtItsLimitIsRefusedAfterItsHello() {
        var machine = awaitingHello()
        _ = machine.hello(.accepted(Self.bob, token: "b"))
        #expect(machine.admissionRefused(Self.full) == [.refuseConnection(Self.full, welcomed: true)])
        #expect(machine.hello(.accepted(Self.bob, token: "b")) == [])
        #expect(machine.received(.message) == [])
        #expect(machine.closed() == [])
    }

    // MARK: Messages before authentication

    @Test func aMessageBeforeTheHelloIsRefused() {
        var machine = awaitingHello()
        #expect(machine.received(.hello) == nil)
        #expect(machine.received(.message) == [.cancelAuthenticationTimer, .refuse(Self.firstHello)])
    }

    @Test func aBinaryMessageBeforeTheHelloIsRefused() {
        var machine = awaitingHello()
        #expect(machine.received(.binary) == [.cancelAuthenticationTimer, .refuse(Self.firstHello)])
    }

    @Test func undecodableTextBeforeTheHelloIsRefusedWithTheDecodersComplaint() {
        var machine = awaitingHello()
        #expect(machine.received(.undecodable("not JSON"))
            == [.cancelAuthenticationTimer, .refuse("\(Self.firstHello) (not JSON)")])
    }

    @Test func afterAuthenticationEveryMessageIsHandled() {
        var machine = authenticatedAlice()
        #expect(machine.received(.hello) == nil)
        #expect(machine.received(.message) == nil)
        #expect(machine.received(.binary) == nil)
        #expect(machine.received(.undecodable("not JSON")) == nil)
    }

    // MARK: Timers

    @Test func noTokenInTimeIsRefused() {
        var machine = awaitingHello()
        #expect(machine.authenticationTimedOut() == [.refuse("no token within 5.0 seconds")])
        #expect(!machine.authenticationTimerRuns)
        #expect(machine.authenticationTimedOut() == [])
        #expect(machine.closed() == [.leaveWaitingPool])
    }

    @Test func theAuthenticationClockFiringAfterTheHelloDoesNothing() {
        var machine = authenticatedAlice()
        #expect(machine.authenticationTimedOut() == [])
        #expect(machine.phase == .open)
    }

    @Test func theAuthenticationClockFiringWhileTheAdmissionDecidesDoesNothing() {
        var machine = Machine(requiresAuthentication: true, bearer: .accepted(Self.alice, token: "a"))
        _ = machine.start()
        #expect(machine.authenticationTimedOut() == [])
        #expect(machine.tokenExpired() == [])
    }

    @Test func anExpiredTokenIsRefused() {
        var machine = authenticatedAlice()
        #expect(machine.tokenExpired()
            == [.refuse("the token has expired: send a hello with a new token before it does")])
        #expect(!machine.expiryTimerRuns)
        #expect(machine.tokenExpired() == [])
        #expect(machine.closed() == [.leaveAdmission(identity: "alice")])
    }

    @Test func expiryBeforeAuthenticationDoesNothing() {
        var machine = awaitingHello()
        #expect(machine.tokenExpired() == [])
        #expect(machine.phase == .awaitingHello)
    }

    // MARK: Displacement, ending and closing

    @Test func aDisplacedConnectionStopsItsClockLeavesThePoolAndIsDropped() {
        var machine = awaitingHello()
        #expect(machine.displaced() == [.cancelAuthenticationTimer, .leaveWaitingPool, .drop])
        #expect(machine.phase == .ending)
        #expect(machine.displaced() == [])
        #expect(machine.hello(.accepted(Self.alice, token: "a")) == [])
        #expect(machine.closed() == [])
    }

    @Test func endingStopsTheAuthenticationClockOnly() {
        var machine = awaitingHello()
        #expect(machine.ending() == [.cancelAuthenticationTimer])
        #expect(machine.ending() == [])
        #expect(machine.authenticationTimedOut() == [])
        #expect(machine.closed() == [.leaveWaitingPool])
    }

    @Test func endingAnAuthenticatedConnectionKeepsTheExpiryUntilItCloses() {
        var machine = authenticatedAlice()
        #expect(machine.ending() == [])
        #expect(machine.tokenExpired() == [])
        #expect(machine.closed() == [.leaveAdmission(identity: "alice")])
    }

    @Test func closingWhileWaitingStopsTheClockAndLeavesThePool() {
        var machine = awaitingHello()
        #expect(machine.closed() == [.cancelAuthenticationTimer, .leaveWaitingPool])
        #expect(machine.phase == .closed)
        #expect(machine.closed() == [])
        #expect(machine.hello(.accepted(Self.alice, token: "a")) == [])
        #expect(machine.displaced() == [])
        #expect(machine.ending() == [])
        #expect(machine.authenticationTimedOut() == [])
        #expect(machine.received(.message) == [])
    }

    @Test func closingAnAuthenticatedConnectionStopsTheExpiryAndLeavesTheAdmissionOnce() {
        var machine = authenticatedAlice()
        #expect(machine.closed() == [.cancelExpiryTimer, .leaveAdmission(identity: "alice")])
        #expect(machine.closed() == [])
        // Who the client was stays known after the close.
        #expect(machine.authentication == Self.alice)
    }

    @Test func closingBeforeStartGivesNothingBack() {
        var machine = Machine(requiresAuthentication: true)
        #expect(machine.closed() == [])
        #expect(machine.start() == [])
    }

    @Test func aVerdictWithoutAQuestionIsIgnored() {
        var machine = awaitingHello()
        #expect(machine.admitted() == [])
        #expect(machine.admissionRefused(Self.full) == [])
        #expect(!machine.isAuthenticated)
        var open = authenticatedAlice()
        #expect(open.admitted() == [])
        #expect(open.admissionRefused(Self.full) == [])
        #expect(open.phase == .open)
    }
}
