import FuzzDriver
import HubValue

// The JSON reader on any bytes: an error or a value, never a crash; a value it reads
// is written back as JSON that reads as the same value.
runFuzzer { bytes in
    guard let value = try? Value.parse(bytes) else { return }
    let written = value.jsonBytes()
    guard let again = try? Value.parse(written) else {
        fatalError("the writer's output does not parse: \(String(decoding: written.prefix(200), as: UTF8.self))")
    }
    precondition(again.jsonBytes() == written, "writing is not stable: \(String(decoding: written.prefix(200), as: UTF8.self))")
}
