import HubEngine
import HubPipeline
import HubValue
import HubWire
#if canImport(Glibc)
import Glibc
#endif

/// `hub-bench keyed`: keyed state and windows of the pipeline language against a
/// hand-written Swift loop over a dictionary doing the same work (the machine's limit):
///
/// - **grouped sum**: `values | groupBy(.k, scan(0, $acc + .v))` over `--elements` values
///   (1,000,000 by default) spread over `--keys` keys (10,000), each output
///   `{key, value}` taken by a sink; the loop reads `.k` and `.v` of each value, adds into
///   a `[Value: Int64]`, and builds the same output object.
/// - **tumbling count per key**: `values | tumbling(1s, count(), key: .k, time: .ts)` over
///   the same values, their `ts` one millisecond apart per 100 values (ten windows of a
///   second, each with every key); the loop counts into a `[WindowKey: Int64]` and emits
///   (builds the output objects of) a window's counts when the next window starts.
///
/// Printed: values per second of each, their ratio, and the memory the pipeline's state
/// holds at its largest (resident memory before and after, from /proc/self/statm).
enum KeyedBench {
    /// A pipeline environment with one source, `values`, the bench's array of values.
    final class Environment: PipelineEnvironment {
        let values: [Value]
        let testScheduler = ImmediateScheduler.shared

        init(values: [Value]) { self.values = values }

        func source(named name: String) throws(HubError) -> AnyPublisher<Value, HubError> {
            Publishers.Sequence<[Value], HubError>(sequence: values).eraseToAnyPublisher()
        }

        func trigger(named name: String, key: Value?) throws(HubError) -> AnyPublisher<Value, HubError> {
            throw HubError(.notFound, "no triggers here")
        }

        var scheduler: any Scheduler { testScheduler }
        var limits: PipelineLimits { PipelineLimits() }
    }

    static func run(elements: Int, keys: Int) {
        let names = (0..<keys).map { Value.string("key\($0)") }
        var values: [Value] = []
        values.reserveCapacity(elements)
        for index in 0..<elements {
            values.append(["k": names[index % keys], "v": .int(Int64(index % 7)), "ts": .int(Int64(index / 100))])
        }
        print("keyed state and windows: \(elements) values over \(keys) keys (hub-bench keyed)")
        print()
        print("| case | pipeline values/s | Swift loop values/s | loop ÷ pipeline | pipeline RSS growth |")
        print("|---|---:|---:|---:|---:|")
        report("grouped running sum", values, pipeline: "values | groupBy(.k, scan(0, $acc + .v), maxKeys: \(keys))") {
            var sums: [Value: Int64] = [:]
            sums.reserveCapacity(keys)
            var last = Value.null
            for value in values {
                guard let key = value["k"], let v = value["v"]?.intValue else { continue }
                let sum = sums[key, default: 0] + v
                sums[key] = sum
                last = ["key": key, "value": .int(sum)]
            }
            blackhole(last)
        }
        report("tumbling count per key", values, pipeline: "values | tumbling(1s, count(), key: .k, time: .ts, maxWindows: \(2 * keys))") {
            struct WindowKey: Hashable {
                var key: Value
                var start: Int64
            }
            var counts: [WindowKey: Int64] = [:]
            var current: Int64 = .min
            var last = Value.null
            for value in values {
                guard let key = value["k"], let ts = value["ts"]?.intValue else { continue }
                let start = ts / 1000 * 1000
                if start > current {
                    // The previous window closes: emit its counts.
                    for (id, count) in counts where id.start < start {
                        last = ["key": id.key, "start": .int(id.start), "end": .int(id.start + 1000), "value": .int(count), "final": true]
                        counts[id] = nil
                    }
                    current = start
                }
                counts[WindowKey(key: key, start: start), default: 0] += 1
            }
            for (id, count) in counts {
                last = ["key": id.key, "start": .int(id.start), "end": .int(id.start + 1000), "value": .int(count), "final": true]
            }
            blackhole(last)
        }
    }

    private static func report(_ name: String, _ values: [Value], pipeline source: String, loop: () -> Void) {
        let environment = Environment(values: values)
        var pipelineTimes: [Double] = []
        var loopTimes: [Double] = []
        var growth = 0
        for _ in 0..<3 {
            let before = residentBytes()
            var peak = before
            var outputs = 0
            pipelineTimes.append(measure {
                do {
                    let publisher = try PipelineCompiler.compile(source, environment: environment)
                    let cancellable = publisher.sink(receiveCompletion: { _ in }, receiveValue: { _ in
                        outputs += 1
                        if outputs % 100_000 == 0 { peak = max(peak, residentBytes()) }
                    })
                    blackhole(cancellable)
                } catch {
                    print("cannot compile \(source): \(error)")
                }
            })
            growth = max(growth, max(peak, residentBytes()) - before)
            blackhole(outputs)
            loopTimes.append(measure(loop))
        }
        let count = Double(values.count)
        let pipelineRate = count / (median(pipelineTimes) / 1e9)
        let loopRate = count / (median(loopTimes) / 1e9)
        print("| \(name) | \(Int(pipelineRate)) | \(Int(loopRate)) | \(format(loopRate / pipelineRate)) | \(growth / 1024) KiB |")
    }

    /// The process's resident memory, from /proc/self/statm.
    static func residentBytes() -> Int {
        guard let file = fopen("/proc/self/statm", "r") else { return 0 }
        defer { fclose(file) }
        var size = 0, resident = 0
        guard withUnsafeMutablePointer(to: &size, { s in withUnsafeMutablePointer(to: &resident) { r in
            fscanfTwo(file, s, r)
        } }) == 2 else { return 0 }
        return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    private static func fscanfTwo(_ file: UnsafeMutablePointer<FILE>, _ a: UnsafeMutablePointer<Int>, _ b: UnsafeMutablePointer<Int>) -> Int32 {
        var buffer = [CChar](repeating: 0, count: 128)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return 0 }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let parts = text.split(separator: " ")
        guard parts.count >= 2, let x = Int(parts[0]), let y = Int(parts[1]) else { return 0 }
        a.pointee = x
        b.pointee = y
        return 2
    }
}
