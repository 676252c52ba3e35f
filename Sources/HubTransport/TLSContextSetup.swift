import CWebsockets
import Synchronization

/// Where TLS meets libwebsockets' creation info: the process-wide OpenSSL initialisation
/// done by the first context, and the TLS options of server and client vhosts.
enum TLSContextSetup {
    /// Whether a context of this process was created with `DO_SSL_GLOBAL_INIT`
    /// (guarded by the mutex, which also serialises context creation).
    private static let libraryInitialised = Mutex(false)

    /// The lws context pointer, to leave the mutex.
    private struct CreatedContext: @unchecked Sendable {
        let raw: OpaquePointer
    }

    /// Creates an lws context; the process's first one with `DO_SSL_GLOBAL_INIT`.
    ///
    /// lws 4.1.6 keeps the OpenSSL ex-data index through which its verify callbacks find
    /// a connection in a process-wide variable and allocates a new one on every context
    /// created with `DO_SSL_GLOBAL_INIT`: a second such context, created while another
    /// loop's client is in a TLS handshake, makes that handshake fail ("can't get wsi
    /// from ssl privdata"). So only the first context initialises the library; TLS
    /// vhosts carry the option in their own creation info (``configureServerVhost(_:tls:arena:)``,
    /// ``configureClientVhost(_:caFile:arena:)``), which is what lws checks to give them
    /// an SSL_CTX. The cost: lws frees TLS vhosts' SSL_CTXs at destroy only in a context
    /// with the option, so a later loop that used TLS leaks them (a few KB per TLS server
    /// or CA file) when it shuts down.
    static func createContext(_ info: inout lws_context_creation_info) -> OpaquePointer? {
        let created = libraryInitialised.withLock { initialised -> CreatedContext? in
            if !initialised { info.options |= cws_option_do_ssl_global_init }
            guard let raw = lws_create_context(&info) else { return nil }
            initialised = true
            return CreatedContext(raw: raw)
        }
        return created?.raw
    }

    /// Makes a listening vhost serve `wss://` with `tls`'s certificate and key.
    static func configureServerVhost(_ info: inout lws_context_creation_info, tls: TLSConfiguration, arena: ContextArena) {
        info.options |= cws_option_do_ssl_global_init
        info.ssl_cert_filepath = UnsafePointer(arena.cString(tls.certificatePath))
        info.ssl_private_key_filepath = UnsafePointer(arena.cString(tls.privateKeyPath))
    }

    /// Makes a client vhost open `wss://` connections trusting `caFile` (`nil`: the
    /// system's CAs).
    static func configureClientVhost(_ info: inout lws_context_creation_info, caFile: String?, arena: ContextArena) {
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
