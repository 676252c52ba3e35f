import Foundation

/// hub-bench: micro-benchmarks of the hub's building blocks, one suite per argument.
let usage = """
usage: hub-bench <suite>
suites:
  json    Value's JSON codec against Foundation's JSONSerialization

"""

switch CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "" {
case "json":
    JSONBench.run()
default:
    FileHandle.standardError.write(Data(usage.utf8))
    exit(2)
}
