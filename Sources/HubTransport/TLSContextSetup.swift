import CWebsockets

/// Where TLS meets libwebsockets' creation info: the process-wide OpenSSL initialisation,
/// done once before the first TLS vhost, and the TLS options of server and client vhosts.
enum TLSContextSetup {
    /// Whether OpenSSL was initialised for lws in this process (guarded by the lock,
    /// which also serialises context creation).
    private static let libraryInitialised = LockedState(false)

    /// The lws context pointer, to leave the lock.
    private struct CreatedContext: @unchecked Sendable {
        let raw: OpaquePointer
    }

    /// Creates an lws context (serialised with the library's initialisation).
    static func createContext(_ info: inout lws_context_creation_info) -> OpaquePointer? {
        let created = libraryInitialised.withLock { _ -> CreatedContext? in
            lws_create_context(&info).map(CreatedContext.init(raw:))
        }
        return created?.raw
    }

    /// Initialises OpenSSL for lws, once per process, before the first TLS vhost.
    ///
    /// lws initialises the library (and allocates the OpenSSL ex-data index through which
    /// its verify callbacks find a connection, in a process-wide variable) when a context
    /// is created with `DO_SSL_GLOBAL_INIT`. Doing it in every context would break a TLS
    /// handshake in progress on another loop ("can't get wsi from ssl privdata"); doing it
    /// in the first context, as earlier versions did, cost every process 4 MB of resident
    /// memory (OpenSSL's tables and the code that fills them: 4.1 MB in a C program that
    /// only creates a context), TLS or not. So a context of its own, with no listener,
    /// does it the first time a TLS vhost is configured, and is kept for the
    /// process's life: destroying it would undo the initialisation. TLS vhosts carry the
    /// option in their own creation info (``configureServerVhost(_:tls:arena:)``,
    /// ``configureClientVhost(_:caFile:arena:)``), which is what lws checks to give them
    /// an SSL_CTX. The cost: lws frees TLS vhosts' SSL_CTXs at destroy only in a context
    /// created with the option, so a loop that used TLS leaks them (a few KB per TLS
    /// server or CA file) when it shuts down.
    private static func initialiseLibrary() {
        libraryInitialised.withLock { initialised in
            guard !initialised else { return }
            var info = lws_context_creation_info()
            info.port = cws_context_port_no_listen
            info.options = cws_option_do_ssl_global_init
            info.fd_limit_per_thread = 16
            initialised = lws_create_context(&info) != nil
        }
    }

    /// Makes a listening vhost serve `wss://` with `tls`'s certificate and key.
    static func configureServerVhost(_ info: inout lws_context_creation_info, tls: TLSConfiguration, arena: ContextArena) {
        initialiseLibrary()
        info.options |= cws_option_do_ssl_global_init
        info.ssl_cert_filepath = UnsafePointer(arena.cString(tls.certificatePath))
        info.ssl_private_key_filepath = UnsafePointer(arena.cString(tls.privateKeyPath))
    }

    /// Makes a client vhost open `wss://` connections trusting `caFile` (`nil`: the
    /// system's CAs).
    static func configureClientVhost(_ info: inout lws_context_creation_info, caFile: String?, arena: ContextArena) {
        initialiseLibrary()
        info.options |= cws_option_do_ssl_global_init
        if let caFile {
            info.client_ssl_ca_filepath = UnsafePointer(arena.cString(caFile))
        }
    }

    /// The `ssl_connection` flags of a client connection using `tls` (`nil`: plain).
    static func connectionFlags(_ tls: ClientTLS?) -> Int32 {
        guard let tls else { return 0 }
        return Int32(cws_lccscf_use_ssl | (tls.allowsSelfSigned ? cws_lccscf_allow_selfsigned : 0))
    }
}
