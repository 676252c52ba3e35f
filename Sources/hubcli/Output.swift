import Foundation
import HubValue

/// hubcli's two streams: data on standard output (one compact JSON value per
/// line), status and errors on standard error prefixed with `hubcli: `.
enum Output {
    /// Writes one line of data to standard output.
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// Writes `value` as one line of compact JSON to standard output.
    static func value(_ value: Value) {
        var bytes = value.jsonBytes()
        bytes.append(UInt8(ascii: "\n"))
        FileHandle.standardOutput.write(Data(bytes))
    }

    /// Writes a status line to standard error.
    static func status(_ text: String) {
        FileHandle.standardError.write(Data("hubcli: \(text)\n".utf8))
    }
}
