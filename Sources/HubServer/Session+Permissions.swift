import HubEngine
import HubValue
import HubWire
import HubPipeline
import HubRegistry
import Logging

/// What the client's identity may do, checked before each operation.
extension Session {
    /// The identity's permissions when they restrict anything (`nil`: everything is allowed,
    /// as for every client of a server without auth and for bare tokens).
    var restrictedPermissions: Permissions? {
        guard let permissions = authentication?.identity.permissions, !permissions.isUnrestricted else { return nil }
        return permissions
    }

    /// Throws `forbidden` naming `name` unless the identity may do `operation` on it
    /// (decisions are cached per name for the session, so a stream of sends matches once).
    func permit(_ operation: Permissions.Operation, _ name: String, doing: String) throws(HubError) {
        guard let permissions = restrictedPermissions else { return }
        let bit = UInt16(1) << UInt16(Permissions.Operation.allCases.firstIndex(of: operation)!)
        let known = permissionCache[name] ?? 0
        let allowed: Bool
        if known & (bit << 8) != 0 {
            allowed = known & bit != 0
        } else {
            allowed = permissions.allows(operation, name)
            if permissionCache.count >= 4096 { permissionCache.removeAll(keepingCapacity: true) }
            permissionCache[name] = known | (bit << 8) | (allowed ? bit : 0)
        }
        guard allowed else { throw Permissions.forbidden(operation, name, doing: doing) }
    }

    /// Whether this client may use the admin resource `name` (`drain`, a system subject
    /// `$sys.…`): the `admin` permission on that name.
    func mayAdminister(_ name: String) -> Bool {
        guard authenticated else { return false }
        return restrictedPermissions?.allows(.admin, name) ?? true
    }

    /// Refuses an admin operation on `name` to a client without the `admin` permission for it.
    func checkAdmin(_ name: String, _ what: String) throws(HubError) {
        guard mayAdminister(name) else {
            throw HubError(
                .forbidden, "\(what) needs the admin permission for '\(name)'",
                data: ["name": .string(name), "permission": "admin"])
        }
    }

    /// Refuses `send`, `complete`, `fail` and `delete` on a system subject (only the
    /// broker writes them), and on a subject the identity may not publish into.
    func checkWritable(_ name: String, doing: String) throws(HubError) {
        if HubName.isSystem(name) {
            throw HubError(.forbidden, "'\(name)' is a system subject: only the broker writes it")
        }
        try permit(.publish, name, doing: doing)
    }

    /// Whether `permissions` allow anything on `name` (a catalog shows only those names).
    static func isVisible(_ name: String, to permissions: Permissions) -> Bool {
        permissions.allows(.subscribe, name) || permissions.allows(.publish, name)
            || permissions.allows(.trigger, name) || permissions.allows(.admin, name)
    }
}
