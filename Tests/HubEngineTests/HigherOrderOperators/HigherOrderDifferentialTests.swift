import Testing
import HubEngine
import OpenCombine
import HubTesting

/// Higher-order operators run on the same random scripts (outer, inner publishers, demand,
/// cancel) on HubEngine and OpenCombine 0.14.0 must give the same histories.
@Suite("Higher-order operators: differential against OpenCombine")
struct HigherOrderDifferentialTests {
    static let innerCount = 6

    // MARK: FlatMap

    @Test(arguments: 0..<150)
    func flatMapOnRandomScripts(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = NestedDifferential.randomScript(length: 30, innerCount: Self.innerCount, using: &generator)
        let initial = [0, 1, 2, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...1, using: &generator)
        let max = [1, 2, nil].randomElement(using: &generator)!
        let result = NestedDifferential.run(
            script, innerCount: Self.innerCount, initialDemand: initial, demandPerValue: perValue,
            hub: { outer, inners in outer.flatMap(maxPublishers: Differential.hubDemand(max)) { inners[$0] } },
            oc: { outer, inners in outer.flatMap(maxPublishers: Differential.ocDemand(max)) { inners[$0] } })
        #expect(result.hub == result.oc, "seed \(seed) max \(String(describing: max)) initial \(String(describing: initial)) perValue \(perValue): \(script)")
    }

    /// Inner publishers that emit synchronously while subscribed (sequences): exercises the
    /// per-inner buffer and the one-at-a-time inner demand.
    ///
    /// A later `request(.unlimited)` is replaced by `request(3)`: OpenCombine then asks its live
    /// inners for `.unlimited` in Dictionary order, which changes from run to run, and cold
    /// inners emit at once, so its order is not reproducible (HubEngine uses creation order).
    @Test(arguments: 0..<100)
    func flatMapOverSequencesOnRandomScripts(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = Differential.randomScript(length: 20, values: 0...4, using: &generator)
            .map { $0 == .request(nil) ? .request(3) : $0 }
        let initial = [0, 1, 2, 3, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...2, using: &generator)
        let max = [1, 2, nil].randomElement(using: &generator)!
        let result = Differential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { source in
                source.flatMap(maxPublishers: Differential.hubDemand(max)) { n in
                    HubEngine.Publishers.Sequence<[Int], TestError>(sequence: (0..<n).map { 10 * n + $0 })
                }
            },
            oc: { source in
                source.flatMap(maxPublishers: Differential.ocDemand(max)) { n in
                    OpenCombine.Publishers.Sequence<[Int], TestError>(sequence: (0..<n).map { 10 * n + $0 })
                }
            })
        #expect(result.hub == result.oc, "seed \(seed) max \(String(describing: max)): \(script)")
    }

    /// The downstream emits new inners, requests, and sends into inners from inside `receive(_:)`.
    @Test(arguments: 0..<150)
    func flatMapWithReentrantDownstream(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = NestedDifferential.randomScript(length: 30, innerCount: Self.innerCount, using: &generator)
        let initial = [0, 1, 2, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...1, using: &generator)
        let max = [1, 2, nil].randomElement(using: &generator)!
        let result = NestedDifferential.run(
            script, innerCount: Self.innerCount, initialDemand: initial, demandPerValue: perValue, reentrant: true,
            hub: { outer, inners in outer.flatMap(maxPublishers: Differential.hubDemand(max)) { inners[$0] } },
            oc: { outer, inners in outer.flatMap(maxPublishers: Differential.ocDemand(max)) { inners[$0] } })
        #expect(result.hub == result.oc, "seed \(seed) max \(String(describing: max)) initial \(String(describing: initial)) perValue \(perValue): \(script)")
    }

    // MARK: SwitchToLatest

    @Test(arguments: 0..<150)
    func switchToLatestWithReentrantDownstream(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = NestedDifferential.randomScript(length: 30, innerCount: Self.innerCount, using: &generator)
        let initial = [0, 1, 2, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...1, using: &generator)
        let result = NestedDifferential.run(
            script, innerCount: Self.innerCount, initialDemand: initial, demandPerValue: perValue, reentrant: true,
            hub: { outer, inners in outer.map { inners[$0] }.switchToLatest() },
            oc: { outer, inners in outer.map { inners[$0] }.switchToLatest() })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
    }

    @Test(arguments: 0..<150)
    func switchToLatestOnRandomScripts(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = NestedDifferential.randomScript(length: 30, innerCount: Self.innerCount, using: &generator)
        let initial = [0, 1, 2, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...1, using: &generator)
        let result = NestedDifferential.run(
            script, innerCount: Self.innerCount, initialDemand: initial, demandPerValue: perValue,
            hub: { outer, inners in outer.map { inners[$0] }.switchToLatest() },
            oc: { outer, inners in outer.map { inners[$0] }.switchToLatest() })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
    }

    @Test(arguments: 0..<60)
    func switchToLatestOverSequencesOnRandomScripts(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = Differential.randomScript(length: 20, values: 0...4, using: &generator)
        let initial = [0, 1, 2, 3, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...2, using: &generator)
        let result = Differential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { source in
                source.map { n in HubEngine.Publishers.Sequence<[Int], TestError>(sequence: (0..<n).map { 10 * n + $0 }) }
                    .switchToLatest()
            },
            oc: { source in
                source.map { n in OpenCombine.Publishers.Sequence<[Int], TestError>(sequence: (0..<n).map { 10 * n + $0 }) }
                    .switchToLatest()
            })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
    }

    // MARK: Catch, TryCatch, Retry

    @Test(arguments: 0..<120)
    func catchOnRandomScripts(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = Differential.randomScript(length: 24, using: &generator)
        let initial = [0, 1, 2, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...1, using: &generator)
        let result = FreshDifferential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { source in source.catch { _ in source } },
            oc: { source in source.catch { _ in source } })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
        #expect(result.hubSubscriptions == result.ocSubscriptions, "seed \(seed): \(script)")
    }

    @Test(arguments: 0..<120)
    func tryCatchOnRandomScripts(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = Differential.randomScript(length: 24, using: &generator)
        let initial = [0, 1, 2, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...1, using: &generator)
        let throwing = Bool.random(using: &generator)
        let result = FreshDifferential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { source in
                HubCastingPublisher(upstream: source.tryCatch { _ -> HubFreshSubjects in
                    if throwing { throw TestError.other(7) }
                    return source
                })
            },
            oc: { source in
                OCCastingPublisher(upstream: source.tryCatch { _ -> OCFreshSubjects in
                    if throwing { throw TestError.other(7) }
                    return source
                })
            })
        #expect(result.hub == result.oc, "seed \(seed) throwing \(throwing): \(script)")
        #expect(result.hubSubscriptions == result.ocSubscriptions)
    }

    @Test(arguments: 0..<120)
    func retryOnRandomScripts(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = Differential.randomScript(length: 24, using: &generator)
        let initial = [0, 1, 2, nil].randomElement(using: &generator)!
        let perValue = Int.random(in: 0...1, using: &generator)
        let retries = Int.random(in: 0...3, using: &generator)
        let result = FreshDifferential.run(
            script, initialDemand: initial, demandPerValue: perValue,
            hub: { source in source.retry(retries) },
            oc: { source in source.retry(retries) })
        #expect(result.hub == result.oc, "seed \(seed) retries \(retries): \(script)")
        #expect(result.hubSubscriptions == result.ocSubscriptions, "seed \(seed) retries \(retries): \(script)")
    }

    /// Retry over a subject that has already failed: every resubscription fails at once, so the
    /// retries are used up synchronously (the re-entrant resubscription loop).
    @Test(arguments: 0..<5)
    func retryOverAFailedSubject(retries: Int) {
        let result = Differential.run(
            [.request(2), .send(1), .fail, .send(2)], initialDemand: 1,
            hub: { $0.retry(retries) }, oc: { $0.retry(retries) })
        #expect(result.hub == result.oc)
        #expect(result.hub == [.subscription, .value(1), .failure(.oops)])
    }

    // MARK: Share, Multicast, Autoconnect

    @Test(arguments: 0..<150)
    func shareOnRandomScripts(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = SharedDifferential.randomScript(length: 30, connections: false, using: &generator)
        let perValue = Int.random(in: 0...1, using: &generator)
        let result = SharedDifferential.run(
            script, demandPerValue: perValue,
            hub: { $0.share() }, oc: { $0.share() })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
        #expect(result.hubSubscriptions == result.ocSubscriptions, "seed \(seed): \(script)")
    }

    @Test(arguments: 0..<150)
    func multicastOnRandomScripts(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = SharedDifferential.randomScript(length: 30, connections: true, using: &generator)
        let perValue = Int.random(in: 0...1, using: &generator)
        let result = SharedDifferential.run(
            script, demandPerValue: perValue,
            hub: { $0.multicast { HubEngine.PassthroughSubject<Int, TestError>() } },
            hubConnect: { $0.connect() },
            oc: { $0.multicast { OpenCombine.PassthroughSubject<Int, TestError>() } },
            ocConnect: { $0.connect() })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
        #expect(result.hubSubscriptions == result.ocSubscriptions, "seed \(seed): \(script)")
    }

    /// Multicast through a `CurrentValueSubject` given once (`multicast(subject:)`).
    @Test(arguments: 0..<80)
    func multicastThroughCurrentValueSubjectOnRandomScripts(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = SharedDifferential.randomScript(length: 30, connections: true, using: &generator)
        let result = SharedDifferential.run(
            script,
            hub: { $0.multicast(subject: HubEngine.CurrentValueSubject<Int, TestError>(-1)) },
            hubConnect: { $0.connect() },
            oc: { $0.multicast(subject: OpenCombine.CurrentValueSubject<Int, TestError>(-1)) },
            ocConnect: { $0.connect() })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
        #expect(result.hubSubscriptions == result.ocSubscriptions, "seed \(seed): \(script)")
    }

    @Test(arguments: 0..<150)
    func autoconnectOnRandomScripts(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        let script = SharedDifferential.randomScript(length: 30, connections: false, using: &generator)
        let perValue = Int.random(in: 0...1, using: &generator)
        let result = SharedDifferential.run(
            script, demandPerValue: perValue,
            hub: { $0.multicast { HubEngine.PassthroughSubject<Int, TestError>() }.autoconnect() },
            oc: { $0.multicast { OpenCombine.PassthroughSubject<Int, TestError>() }.autoconnect() })
        #expect(result.hub == result.oc, "seed \(seed): \(script)")
        #expect(result.hubSubscriptions == result.ocSubscriptions, "seed \(seed): \(script)")
    }
}
