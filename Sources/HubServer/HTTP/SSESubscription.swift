import HubTransport
import HubValue
import HubWire

/// The `subscribe` an event stream request makes: where it resumes (the
/// `Last-Event-ID` header an `EventSource` sends when it reconnects, else `?since=`,
/// else `?last=`), how many values it takes (`?demand=N`: the stream ends after N;
/// unlimited otherwise), and the subscription's `?buffer=` and `?overflow=`.
enum SSESubscription {
    /// The protocol's `subscribe` fields for `request` (without `to` or `pipeline`).
    ///
    /// - Throws: `bad_message` naming the parameter that is not well-formed.
    static func fields(of request: HTTPRequest) throws(HubError) -> Value.Object {
        var fields: Value.Object = ["op": "subscribe", "id": 1, "demand": "unlimited"]
        if let id = request.header("last-event-id"), !id.isEmpty {
            fields["since"] = try position(id, "the Last-Event-ID header")
        } else if let since = request.queryValue("since") {
            fields["since"] = try position(since, "'since'")
        } else if let last = request.queryValue("last") {
            guard let count = UInt64(last), count <= HistorySince.maxNumber else {
                throw HubError(.badMessage, "'last' must be a number of values (an integer ≥ 0)")
            }
            fields["since"] = ["last": .int(Int64(count))]
        }
        if let text = request.queryValue("demand") {
            guard let demand = Int64(text), demand >= 1 else {
                throw HubError(.badMessage, "'demand' must be an integer ≥ 1: the stream ends after that many values")
            }
            fields["demand"] = .int(demand)
        }
        if let text = request.queryValue("buffer") {
            guard let buffer = Int64(text) else { throw HubError(.badMessage, "'buffer' must be an integer ≥ 1") }
            fields["buffer"] = .int(buffer)
        }
        if let overflow = request.queryValue("overflow") {
            fields["overflow"] = .string(overflow)
        }
        return fields
    }

    /// The `since` of an event id, `OFFSET@EPOCH` (what the stream's events carry) or a
    /// bare `OFFSET`.
    static func position(_ text: String, _ what: String) throws(HubError) -> Value {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        guard let offset = UInt64(parts[0]), offset <= HistorySince.maxNumber, parts.count == 1 || !parts[1].isEmpty else {
            throw HubError(.badMessage, "\(what) must be OFFSET@EPOCH (an event's id) or OFFSET, not '\(text)'")
        }
        var since: Value.Object = ["offset": .int(Int64(offset))]
        if parts.count == 2 { since["epoch"] = .string(String(parts[1])) }
        return .object(since)
    }

    /// Appends the id of the event of a value at `offset` in `epoch`, `OFFSET@EPOCH`, to
    /// `buffer`.
    static func appendEventID(offset: UInt64, epoch: String, to buffer: inout [UInt8]) {
        WireBytes.append(offset, to: &buffer)
        buffer.append(UInt8(ascii: "@"))
        buffer.append(contentsOf: epoch.utf8)
    }
}
