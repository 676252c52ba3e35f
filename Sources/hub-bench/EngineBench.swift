import HubEngine
import OpenCombine

/// `hub-bench engine`: the same chains on HubEngine and on OpenCombine, in one process.
///
/// Prints one line per case, `CASE <name> hub_ns=X opencombine_ns=Y ratio=Z`,
/// where X and Y are nanoseconds per published element (the median of several
/// rounds) and Z = Y / X.
enum EngineBench {
    static func run(elements: Int = 1_000_000, only: String? = nil) {
        self.only = only
        report("subject_filter_map_sink", elements: elements,
               hub: hubSubjectFilterMap, oc: ocSubjectFilterMap)
        report("sequence_map_scan_sink_demand1", elements: elements,
               hub: hubSequenceMapScanDemandOne, oc: ocSequenceMapScanDemandOne)
        report("subject_fanout_100_sinks", elements: max(1, elements / 100),
               hub: hubFanOut, oc: ocFanOut)
    }

    /// When set, only the case of that name runs.
    nonisolated(unsafe) static var only: String?

    /// Runs both sides `rounds` times, alternating, and prints the medians.
    static func report(_ name: String, elements: Int, rounds: Int = 7,
                       hub: (Int) -> Int, oc: (Int) -> Int) {
        if let only, only != name { return }
        var hubTimes: [Double] = []
        var ocTimes: [Double] = []
        // Warm-up, and a check that both sides computed the same thing.
        let hubCheck = hub(elements / 10)
        let ocCheck = oc(elements / 10)
        precondition(hubCheck == ocCheck, "\(name): HubEngine computed \(hubCheck), OpenCombine \(ocCheck)")
        for _ in 0..<rounds {
            hubTimes.append(measure { blackhole(hub(elements)) } / Double(elements))
            ocTimes.append(measure { blackhole(oc(elements)) } / Double(elements))
        }
        let h = median(hubTimes), o = median(ocTimes)
        print("CASE \(name) hub_ns=\(format(h)) opencombine_ns=\(format(o)) ratio=\(format(o / h))")
    }

    // MARK: PassthroughSubject → filter → map → sink

    static func hubSubjectFilterMap(_ n: Int) -> Int {
        let subject = HubEngine.PassthroughSubject<Int, Never>()
        var sum = 0
        let cancellable = subject.filter { $0 & 1 == 0 }.map { $0 &* 3 }.sink { sum &+= $0 }
        for i in 0..<n { subject.send(i) }
        cancellable.cancel()
        return sum
    }

    static func ocSubjectFilterMap(_ n: Int) -> Int {
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        var sum = 0
        let cancellable = subject.filter { $0 & 1 == 0 }.map { $0 &* 3 }.sink { sum &+= $0 }
        for i in 0..<n { subject.send(i) }
        cancellable.cancel()
        return sum
    }

    // MARK: sequence → map → scan → subscriber asking for one element at a time

    static func hubSequenceMapScanDemandOne(_ n: Int) -> Int {
        let subscriber = HubOneByOne()
        (0..<n).publisher.map { $0 &* 2 }.scan(0) { $0 &+ $1 }.subscribe(subscriber)
        return subscriber.last
    }

    static func ocSequenceMapScanDemandOne(_ n: Int) -> Int {
        let subscriber = OCOneByOne()
        OpenCombine.Publishers.Sequence<Range<Int>, Never>(sequence: 0..<n)
            .map { $0 &* 2 }.scan(0) { $0 &+ $1 }.subscribe(subscriber)
        return subscriber.last
    }

    // MARK: one subject, 100 sinks

    static func hubFanOut(_ n: Int) -> Int {
        let subject = HubEngine.PassthroughSubject<Int, Never>()
        var sum = 0
        let sinks = (0..<100).map { _ in subject.sink { sum &+= $0 } }
        for i in 0..<n { subject.send(i) }
        sinks.forEach { $0.cancel() }
        return sum
    }

    static func ocFanOut(_ n: Int) -> Int {
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        var sum = 0
        let sinks = (0..<100).map { _ in subject.sink { sum &+= $0 } }
        for i in 0..<n { subject.send(i) }
        sinks.forEach { $0.cancel() }
        return sum
    }
}

/// Requests one element at subscription and one more with each element.
private final class HubOneByOne: HubEngine.Subscriber {
    var last = 0
    func receive(subscription: any HubEngine.Subscription) { subscription.request(.max(1)) }
    func receive(_ input: Int) -> HubEngine.Subscribers.Demand {
        last = input
        return .max(1)
    }
    func receive(completion: HubEngine.Subscribers.Completion<Never>) {}
}

/// The OpenCombine twin of ``HubOneByOne``.
private final class OCOneByOne: OpenCombine.Subscriber {
    var last = 0
    func receive(subscription: any OpenCombine.Subscription) { subscription.request(.max(1)) }
    func receive(_ input: Int) -> OpenCombine.Subscribers.Demand {
        last = input
        return .max(1)
    }
    func receive(completion: OpenCombine.Subscribers.Completion<Never>) {}
}
