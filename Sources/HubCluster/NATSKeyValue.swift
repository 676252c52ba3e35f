import CNATS

/// A JetStream key-value bucket of a ``NATSConnection``: the cluster's current values.
///
/// Binding and ``get(_:)`` are requests to the server that block until it answers (or
/// the JetStream timeout): call them off the hub's loop. Writes need no wait: a
/// message published on ``subject(for:)`` (core NATS) is stored in the bucket's stream,
/// a message with the header `KV-Operation: DEL` deletes the key.
public final class NATSKeyValue: @unchecked Sendable {
    /// The bucket's name.
    public let bucket: String
    private let context: OpaquePointer
    private let store: OpaquePointer

    /// Binds to the bucket `bucket`, creating it (memory storage unless `onDisk`, one value
    /// per key, values of at most `maxValueBytes`, each key gone `ttl` after its last write
    /// if given) when the server has none. Blocks; throws when the server has no JetStream
    /// (`nats-server -js`) or does not answer.
    public init(
        connection: NATSConnection, bucket: String, maxValueBytes: Int, ttl: Duration? = nil, onDisk: Bool = false
    ) throws(NATSError) {
        self.bucket = bucket
        var context: OpaquePointer?
        var status = natsConnection_JetStream(&context, connection.connection, nil)
        guard status == NATS_OK, let context else {
            throw NATSError(.connectFailed, doing: "opening JetStream", status: status)
        }
        var store: OpaquePointer?
        status = js_KeyValue(&store, context, bucket)
        if status == NATS_NOT_FOUND {
            var config = kvConfig()
            kvConfig_Init(&config)
            status = bucket.withCString { name in
                config.Bucket = name
                config.History = 1
                config.MaxValueSize = Int32(clamping: maxValueBytes)
                config.StorageType = onDisk ? js_FileStorage : js_MemoryStorage
                if let ttl {
                    let (seconds, attoseconds) = ttl.components
                    // libnats passes TTL on as the stream's MaxAge: nanoseconds.
                    config.TTL = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
                }
                return js_CreateKeyValue(&store, context, &config)
            }
            if status != NATS_OK || store == nil {
                let createError = NATSError(.connectFailed, doing: "creating the key-value bucket \(bucket)", status: status)
                // Another node may have created it meanwhile.
                status = js_KeyValue(&store, context, bucket)
                if status != NATS_OK {
                    jsCtx_Destroy(context)
                    throw createError
                }
            }
        }
        guard status == NATS_OK, let store else {
            jsCtx_Destroy(context)
            throw NATSError(.connectFailed, doing: "binding the key-value bucket \(bucket)", status: status)
        }
        self.context = context
        self.store = store
    }

    deinit {
        kvStore_Destroy(store)
        jsCtx_Destroy(context)
    }

    /// The core NATS subject whose messages write `key`.
    public func subject(for key: String) -> String { "$KV.\(bucket).\(key)" }

    /// Writes `value` to `key` if the key has no value; returns the new revision, or `nil`
    /// when it has one. Blocks.
    public func create(_ key: String, _ value: [UInt8]) throws(NATSError) -> UInt64? {
        var revision: UInt64 = 0
        let status = value.withUnsafeBytes { kvStore_Create(&revision, store, key, $0.baseAddress, Int32($0.count)) }
        if status == NATS_ERR { return nil }
        guard status == NATS_OK else { throw NATSError(.publishFailed, doing: "creating \(key) in \(bucket)", status: status) }
        return revision
    }

    /// Writes `value` to `key` if its revision is still `last`; returns the new revision,
    /// or `nil` when it is not (another wrote it, or it expired). Blocks.
    public func update(_ key: String, _ value: [UInt8], last: UInt64) throws(NATSError) -> UInt64? {
        var revision: UInt64 = 0
        let status = value.withUnsafeBytes { kvStore_Update(&revision, store, key, $0.baseAddress, Int32($0.count), last) }
        if status == NATS_ERR { return nil }
        guard status == NATS_OK else { throw NATSError(.publishFailed, doing: "updating \(key) in \(bucket)", status: status) }
        return revision
    }

    /// The value of `key` and its revision, or `nil` when it has none (never put, or deleted). Blocks.
    public func entry(_ key: String) throws(NATSError) -> (value: [UInt8], revision: UInt64)? {
        var entry: OpaquePointer?
        let status = kvStore_Get(&entry, store, key)
        if status == NATS_NOT_FOUND { return nil }
        guard status == NATS_OK, let entry else { throw NATSError(.subscribeFailed, doing: "reading \(key) from \(bucket)", status: status) }
        defer { kvEntry_Destroy(entry) }
        let revision = kvEntry_Revision(entry)
        let length = Int(kvEntry_ValueLen(entry))
        guard length > 0, let bytes = kvEntry_Value(entry) else { return ([], revision) }
        return (Array(UnsafeRawBufferPointer(start: bytes, count: length)), revision)
    }

    /// The value of `key`, or `nil` when it has none (never put, or deleted). Blocks.
    public func get(_ key: String) throws(NATSError) -> [UInt8]? {
        var entry: OpaquePointer?
        let status = kvStore_Get(&entry, store, key)
        if status == NATS_NOT_FOUND { return nil }
        guard status == NATS_OK, let entry else { throw NATSError(.subscribeFailed, doing: "reading \(key) from \(bucket)", status: status) }
        defer { kvEntry_Destroy(entry) }
        let length = Int(kvEntry_ValueLen(entry))
        guard length > 0, let bytes = kvEntry_Value(entry) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: length))
    }
}
