import Foundation

/// Reading a Server-Sent Events stream (`text/event-stream`, chunked) with an
/// ``HTTPTestClient``: the response's head, then one event at a time.
extension HTTPTestClient {
    /// One event of a stream.
    public struct Event: Sendable, Equatable, CustomStringConvertible {
        /// The `id:` field, if any.
        public var id: String?
        /// The `event:` field, if any (a value's event has none).
        public var event: String?
        /// The `data:` lines, joined with newlines.
        public var data: String

        /// An event.
        public init(id: String? = nil, event: String? = nil, data: String) {
            self.id = id
            self.event = event
            self.data = data
        }

        public var description: String { "[id: \(id ?? "-") event: \(event ?? "-") data: \(data)]" }
    }

    /// Sends a `GET` of `path` (blocking) and reads the answer's head: for a stream
    /// (`200`), the body follows with ``nextEvent()``; any other answer is read whole.
    public func openStream(path: String, headers: [String: String] = [:]) throws -> Response {
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        try write(Array((request + "\r\n").utf8))
        let (status, fields) = try readHead()
        guard fields["transfer-encoding"] == "chunked" else {
            let length = Int(fields["content-length"] ?? "0") ?? 0
            while pending.count < length { try fill() }
            let body = Array(pending.prefix(length))
            pending.removeFirst(length)
            return Response(status: status, headers: fields, body: body)
        }
        return Response(status: status, headers: fields, body: [])
    }

    /// The next event of the stream (blocking), or `nil` when the stream ended (its
    /// last chunk, or the connection closed).
    public func nextEvent() throws -> Event? {
        while true {
            if let end = streamText.range(of: "\n\n") {
                let block = streamText[..<end.lowerBound]
                streamText = String(streamText[end.upperBound...])
                var event = Event(data: "")
                var data: [Substring] = []
                for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                    if line.hasPrefix(":") { continue }
                    let (name, value) = line.firstIndex(of: ":").map {
                        (line[..<$0], line[line.index(after: $0)...].drop { $0 == " " })
                    } ?? (line, "")
                    switch name {
                    case "id": event.id = String(value)
                    case "event": event.event = String(value)
                    case "data": data.append(value)
                    default: break
                    }
                }
                event.data = data.joined(separator: "\n")
                return event
            }
            guard let chunk = try nextChunk() else { return nil }
            streamText += String(decoding: chunk, as: UTF8.self)
        }
    }

    /// The events that arrive until the stream ends.
    public func remainingEvents() throws -> [Event] {
        var events: [Event] = []
        while let event = try nextEvent() { events.append(event) }
        return events
    }

    /// The next chunk of a chunked body, or `nil` at its end.
    private func nextChunk() throws -> [UInt8]? {
        let crlf: [UInt8] = [13, 10]
        var lineEnd: Int?
        while lineEnd == nil {
            if let range = pending.firstRange(of: crlf) { lineEnd = range.lowerBound; break }
            do { try fill() } catch { return nil }
        }
        let sizeText = String(decoding: pending[..<lineEnd!], as: UTF8.self)
        guard let size = Int(sizeText.prefix { $0 != ";" }, radix: 16) else {
            throw Failure(description: "bad chunk size '\(sizeText)'")
        }
        while pending.count < lineEnd! + 2 + size + 2 {
            do { try fill() } catch { return nil }
        }
        let chunk = Array(pending[(lineEnd! + 2)..<(lineEnd! + 2 + size)])
        pending.removeFirst(lineEnd! + 2 + size + 2)
        if size > 0 { chunksRead += 1 }
        return size == 0 ? nil : chunk
    }
}
