/// The dashboard's static files, served under `/dashboard/` (docs/operating.md), and the
/// JS client, served at `/client/hub.js`. They are resources of this target embedded in
/// the binary by SwiftPM (`.embedInCode` in Package.swift): this folder links to
/// `Dashboard/` and `clients/js/hub.js`, so that the repository holds one copy of each.
enum DashboardAssets {
    /// File name → (content type, text).
    static let files: [String: (contentType: String, text: String)] = [
        "index.html": ("text/html; charset=utf-8", String(decoding: PackageResources.index_html, as: UTF8.self)),
        "dashboard.js": ("text/javascript; charset=utf-8", String(decoding: PackageResources.dashboard_js, as: UTF8.self)),
        "dashboard.css": ("text/css; charset=utf-8", String(decoding: PackageResources.dashboard_css, as: UTF8.self)),
        "hub.js": ("text/javascript; charset=utf-8", String(decoding: PackageResources.hub_js, as: UTF8.self)),
    ]
}
