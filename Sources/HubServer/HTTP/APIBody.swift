import HubTransport
import HubValue
import HubWire

/// Reads an HTTP API request's body: one JSON value (`application/json`, or no type),
/// or one JSON value a line (`application/x-ndjson`), every line parsed before any is
/// used, so that a bad line refuses the whole request.
enum APIBody {
    /// The media types of a body.
    enum Kind: Equatable {
        /// One JSON value.
        case json
        /// One JSON value a line.
        case ndjson
    }

    /// The kind of `request`'s body by its `Content-Type` (parameters such as `charset`
    /// ignored; none is JSON), or `nil` for a type the API does not read.
    static func kind(of request: HTTPRequest) -> Kind? {
        guard let header = request.header("content-type") else { return .json }
        let type = String(header.prefix { $0 != ";" }.filter { $0 != " " && $0 != "\t" }).lowercased()
        switch type {
        case "", "application/json": return .json
        case "application/x-ndjson", "application/jsonl": return .ndjson
        default: return nil
        }
    }

    /// The one JSON value of `body`.
    ///
    /// - Throws: `bad_message` naming where the JSON is wrong (an empty body included).
    static func value(_ body: [UInt8]) throws(HubError) -> Value {
        guard body.contains(where: { !isBlank($0) }) else {
            throw HubError(.badMessage, "the body is empty: send a JSON value")
        }
        do {
            return try Value.parse(body)
        } catch {
            throw HubError(.badMessage, "the body is not JSON: \(error.reason) (at byte \(error.offset))")
        }
    }

    /// The values of an NDJSON `body`, one a line in order (blank lines skipped).
    ///
    /// - Throws: `bad_message` naming the first bad line (counted from 1); none when
    ///   there is no value at all.
    static func values(_ body: [UInt8]) throws(HubError) -> [Value] {
        var values: [Value] = []
        var line = 0
        for slice in body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            line += 1
            guard slice.contains(where: { !isBlank($0) }) else { continue }
            do {
                values.append(try Value.parse(slice))
            } catch {
                throw HubError(
                    .badMessage, "line \(line) of the body is not JSON: \(error.reason) (at byte \(error.offset) of the line); nothing was sent",
                    data: ["line": .int(Int64(line))])
            }
        }
        guard !values.isEmpty else { throw HubError(.badMessage, "the body has no line: send one JSON value a line") }
        return values
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n")
    }
}
