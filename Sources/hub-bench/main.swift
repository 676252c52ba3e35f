#if canImport(Glibc)
import Glibc
#endif

/// `hub-bench engine` and `hub-bench json`: benchmarks that print their figures.
let arguments = CommandLine.arguments.dropFirst()

/// The value after `name` on the command line, if any.
func option(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), arguments.index(after: index) < arguments.endIndex else { return nil }
    return arguments[arguments.index(after: index)]
}

/// `--elements N` runs each case over N elements, `--case NAME` only that case (for profiling under valgrind).
let elementsOverride = option("--elements").flatMap { Int($0) }

switch arguments.first {
case "engine":
    EngineBench.run(elements: elementsOverride ?? 1_000_000, only: option("--case"))
case "json":
    JSONBench.run()
case "keyed":
    KeyedBench.run(elements: elementsOverride ?? 1_000_000, keys: option("--keys").flatMap { Int($0) } ?? 10_000)
default:
    FileDescriptorOutput.standardError.write("usage: hub-bench engine [--elements N] [--case NAME] | json | keyed [--elements N] [--keys K]\n")
    exit(2)
}
