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

    /// Binds to the bucket `bucket`, creating it (memory storage, one value per key,
    /// values of at most `maxValueBytes`) when the server has none. Blocks; throws when
    /// the server has no JetStream (`nats-server -js`) or does not answer.
    public init(connection: NATSConnection, bucket: String, maxValueBytes: Int) throws(NATSError) {
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
                config.StorageType = js_MemoryStorage
                return js_CreateKeyValue(&store, context, &config)
            }
            if status == NATS_ERR || store == nil {
                // Another node created it meanwhile.
                status = js_KeyValue(&store, context, bucket)
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
