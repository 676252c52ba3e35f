import CWebsockets
import Foundation

/// Memory and objects that libwebsockets points at and that must outlive what points at
/// them: C strings and zeroed structures handed to lws (protocol tables, vhost names,
/// retry policies, connect info strings), and the Swift objects lws callbacks reach
/// through unretained pointers.
///
/// Everything is released together, by ``releaseAll()`` or when the arena goes away:
/// an event loop's arena after its lws context is destroyed, a client connection's after
/// lws has freed the connection.
final class ContextArena {
    /// An lws protocol callback (a C function pointer).
    typealias ProtocolCallback = @convention(c) (
        OpaquePointer?, lws_callback_reasons, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int
    ) -> Int32

    private var strings: [UnsafeMutablePointer<CChar>] = []
    private var allocations: [UnsafeMutableRawPointer] = []
    private var objects: [AnyObject] = []

    init() {}

    deinit {
        releaseAll()
    }

    /// A C copy of `string`, valid until the arena is released.
    func cString(_ string: String) -> UnsafeMutablePointer<CChar> {
        let copy = strdup(string)!
        strings.append(copy)
        return copy
    }

    /// Zeroed memory for `count` values of `T`, valid until the arena is released.
    func allocate<T>(_ type: T.Type, count: Int = 1) -> UnsafeMutablePointer<T> {
        let byteCount = MemoryLayout<T>.stride * count
        let raw = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: MemoryLayout<T>.alignment)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
        allocations.append(raw)
        return raw.bindMemory(to: T.self, capacity: count)
    }

    /// Keeps `object` alive until the arena is released.
    func retain(_ object: AnyObject) {
        objects.append(object)
    }

    /// A vhost's protocol table: one protocol named `name` served by `callback` (which
    /// finds `user` through `lws_get_protocol`), then the terminating zero entry.
    func protocolTable(
        name: String, callback: ProtocolCallback, user: UnsafeMutableRawPointer? = nil,
        perSessionDataSize: Int = 0, receiveBufferSize: Int = 0, transmitChunkSize: Int = 0
    ) -> UnsafeMutablePointer<lws_protocols> {
        let protocols = allocate(lws_protocols.self, count: 2)
        protocols[0].name = UnsafePointer(cString(name))
        protocols[0].callback = callback
        protocols[0].per_session_data_size = perSessionDataSize
        protocols[0].rx_buffer_size = receiveBufferSize
        protocols[0].tx_packet_size = transmitChunkSize
        protocols[0].user = user
        return protocols
    }

    /// A keepalive policy: lws pings after `pingInterval` seconds of silence and hangs up
    /// after `idleTimeout` (at least the ping interval) without a reply.
    func keepalivePolicy(pingInterval: UInt16, idleTimeout: UInt16) -> UnsafeMutablePointer<lws_retry_bo_t> {
        let policy = allocate(lws_retry_bo_t.self)
        policy.pointee.secs_since_valid_ping = pingInterval
        policy.pointee.secs_since_valid_hangup = max(idleTimeout, pingInterval)
        return policy
    }

    /// Frees every string and allocation and lets the retained objects go.
    func releaseAll() {
        objects.removeAll()
        for string in strings { free(string) }
        strings.removeAll()
        for raw in allocations { raw.deallocate() }
        allocations.removeAll()
    }
}
