import CWebsockets
import DequeModule
import Logging

// Accepted sockets taken into lws a few a pass: handed between loops, queued, adopted
// within the pass budget (at most eight TLS handshakes in flight), and the closes and
// upgrade answers left to the end of a pass.
extension WebSocketServer {
    // MARK: - Sockets served on other loops

    /// Takes the socket lws just accepted on `listener` away from lws (nonzero: lws then
    /// closes its own descriptor, the server has a duplicate), with up to
    /// ``Configuration/adoptionsPerPass`` more that wait in the kernel's accept queue:
    /// each goes where ``socketDistributor`` says, or to this server's own queue
    /// (``adopt(_:)``). lws would otherwise accept every waiting socket in this pass
    /// and start serving each (a TLS handshake each) in the next. Zero (lws serves the
    /// socket itself) only when no duplicate can be made.
    func distribute(accepted descriptor: Int32, listener: OpaquePointer) -> Int32 {
        guard let socket = AcceptedSocket(duplicating: descriptor) else { return 0 }
        hand(socket)
        let listening = lws_get_socket_fd(listener)
        guard listening >= 0 else { return 1 }
        var more = configuration.effectiveAdoptionsPerPass - 1
        // Sockets left in the kernel's queue wait there rather than in the server's.
        while more > 0, adoptionQueue.count < configuration.maximumPendingHandshakes {
            let accepted = cws_accept_nonblocking(listening)
            guard accepted >= 0 else { break }
            more -= 1
            hand(AcceptedSocket(accepted: accepted))
        }
        return 1
    }

    func hand(_ socket: AcceptedSocket) {
        if let take = socketDistributor?() {
            take(socket)
        } else {
            adopt(socket)
        }
    }

    /// Serves `socket`, which this server or one on another loop accepted (its upgrade or
    /// HTTP request, TLS when configured); closes it when this server is closed or lws
    /// cannot take it. Sockets are taken into lws at most
    /// ``Configuration/adoptionsPerPass`` a pass, at its end, oldest first.
    public func adopt(_ socket: AcceptedSocket) {
        eventLoop.preconditionInEventLoop()
        guard vhost != nil, !isClosed, !eventLoop.isDestroying else {
            socket.close()
            return
        }
        adoptionQueue.append(socket)
        scheduleAdoptions()
    }

    /// Sockets accepted and not yet taken into lws (for tests).
    var queuedAdoptionCount: Int { adoptionQueue.count }

    func scheduleAdoptions() {
        guard !adoptionScheduled else { return }
        adoptionScheduled = true
        // The end of this pass, outside lws's callbacks; what remains, at the end of the
        // next (which polls without waiting, serving what this one adopted first).
        eventLoop.executeAtEndOfPass { [weak self] in self?.adoptQueued() }
    }

    func adoptQueued() {
        adoptionScheduled = false
        let tls = configuration.tls != nil
        let now = EventLoop.monotonicNanoseconds()
        if tls { expireTLSInFlight(now: now) }
        var budget = configuration.effectiveAdoptionsPerPass
        while budget > 0, !adoptionQueue.isEmpty {
            if tls, tlsInFlightSet.count >= WebSocketServer.tlsHandshakesInFlight {
                // The next waits for a handshake to finish, or to stop counting.
                adoptionsThatWaitedForTLS += 1
                waitForTLSInFlight()
                return
            }
            let socket = adoptionQueue.removeFirst()
            budget -= 1
            guard let vhost, !isClosed, !eventLoop.isDestroying else {
                socket.close()
                continue
            }
            // On failure lws closes the descriptor itself.
            guard let wsi = cws_adopt_raw_socket(vhost, socket.descriptor, protocolName) else {
                logger.debug("an accepted socket could not be adopted")
                continue
            }
            if tls, tlsInFlightSet.insert(wsi).inserted {
                tlsInFlight.append((wsi, now + tlsInFlightHold))
                mostTLSHandshakesInFlight = max(mostTLSHandshakesInFlight, tlsInFlightSet.count)
            }
        }
        if !adoptionQueue.isEmpty { scheduleAdoptions() }
    }

    /// Drops the TLS sockets that stopped counting as handshakes in flight.
    func expireTLSInFlight(now: Int64) {
        while let first = tlsInFlight.first, first.until <= now || !tlsInFlightSet.contains(first.wsi) {
            tlsInFlight.removeFirst()
            if first.until <= now { tlsInFlightSet.remove(first.wsi) }
        }
    }

    /// A TLS handshake in flight ended (done, or its socket freed): the next may start.
    func tlsHandshakeEnded(_ wsi: OpaquePointer) {
        guard tlsInFlightSet.remove(wsi) != nil else { return }
        if !adoptionQueue.isEmpty { scheduleAdoptions() }
    }

    /// Adopts again when the oldest handshake in flight stops counting (unless one
    /// ends first).
    func waitForTLSInFlight() {
        guard tlsInFlightTimer == nil, let first = tlsInFlight.first else { return }
        tlsInFlightTimer = eventLoop.scheduleTimer(deadline: first.until, interval: nil) { [weak self] in
            guard let self else { return }
            self.tlsInFlightTimer = nil
            if !self.adoptionQueue.isEmpty { self.scheduleAdoptions() }
        }
    }

    /// TLS handshakes adopted and not done (for tests).
    var tlsHandshakesInFlightCount: Int { tlsInFlightSet.count }

    /// Closes `socket` (its close handshake complete, its reading paused) at the end of
    /// this pass or a later one: at most ``Configuration/closesPerPass`` a pass, for at most
    /// 2 ms, oldest first.
    func closeSoon(_ socket: ServerSocket) {
        closes.append(socket)
    }

    /// Sockets whose close waits for a pass (for tests).
    var queuedCloseCount: Int { closes.count }
    /// The most sockets one pass has closed (for tests).
    var mostClosedInOnePass: Int { closes.mostInOnePass }

    /// Answers the upgrade request `socket` has read at the end of this pass or a later
    /// one: at most ``Configuration/upgradesPerPass`` a pass, for at most 2 ms, oldest first.
    func upgradeSoon(_ socket: ServerSocket) {
        upgrades.append(socket)
    }

    /// Upgrade requests read and not answered yet (for tests).
    var queuedUpgradeCount: Int { upgrades.count }
    /// The most upgrade requests one pass has answered (for tests).
    var mostUpgradedInOnePass: Int { upgrades.mostInOnePass }
}
